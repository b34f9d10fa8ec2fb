import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One download resumed twice at once from the same bytes in one process: a button tapped
/// twice, each tap resuming what `ResumableDownload.pending(for:)` found. The second
/// resume came while the first was writing the partial file: it cut the file back to the bytes
/// of the record, under the first's feet, and the first went on writing after a hole of zeros
/// and delivered that as the whole file. Each download now delivers the server's file byte for
/// byte, or fails typed. On every transport.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct TwiceResumedAttackTests {
    typealias Lie = ResumeLie

    /// The file: 3 MiB, so that the first download writes to disk (a mebibyte at a time) before
    /// it has all.
    static let body = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12 | 1) })
    /// How many bytes the record says are on disk.
    static let held = 1000

    /// The size of `file`, if it is there.
    static func size(of file: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue
    }

    @Test func aSecondResumeWhileTheFirstWritesLeavesEachWholeOrFailed() async throws {
        let directory = try Lie.Directory()
        let body = Self.body
        let releaseFirst = DispatchSemaphore(value: 0), releaseSecond = DispatchSemaphore(value: 0)
        let requests = Recorder<String>()
        let count = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let index = count.withLock { $0 += 1; return $0 }
                let (head, rest) = Lie.ranged(request, of: body)
                guard !head.isEmpty else {
                    // A download that started over: the whole file.
                    guard connection.send(rest) else { return }
                    continue
                }
                if index == 1 {
                    // The first resume: two mebibytes, then the rest once the second has come.
                    guard connection.send(head + rest.prefix(2 << 20)) else { return }
                    _ = releaseFirst.wait(timeout: .now() + 30)
                    guard connection.send(Array(rest.dropFirst(2 << 20))) else { return }
                } else {
                    // The second: its head, then nothing until the first has ended, then the rest.
                    guard connection.send(head) else { return }
                    _ = releaseSecond.wait(timeout: .now() + 30)
                    guard connection.send(rest) else { return }
                }
            }
        }
        defer {
            releaseFirst.signal()
            releaseSecond.signal()
            server.stop()
        }
        let resume = try directory.resume(of: body, offset: Self.held, from: server.baseURL + "/file")
        let api = try Lie.api()
        let first = api.download(route: .get(server.baseURL + "/file"), to: directory.destination, resumingFrom: resume)
        // The first has written to disk past the bytes it resumed from.
        let partialFile = resume.partialFile
        try #require(await eventually(timeout: 20) { (Self.size(of: partialFile) ?? 0) > Self.held + (1 << 20) / 2 })
        let second = api.download(route: .get(server.baseURL + "/file"), to: directory.destination, replacing: true, resumingFrom: resume)
        // The second's head has come: it took the bytes (and, before, cut them back), or started over.
        _ = await eventually(timeout: 20) { Self.size(of: partialFile) == Self.held || requests.items.count >= 3 }
        releaseFirst.signal()
        let firstResult = await Lie.result(of: first)
        if case .success = firstResult {
            #expect(try Data(contentsOf: directory.destination) == body, "the first download delivered a file that is not the server's")
        }
        releaseSecond.signal()
        let secondResult = await Lie.result(of: second)
        if case .success = secondResult {
            #expect(try Data(contentsOf: directory.destination) == body, "the second download delivered a file that is not the server's")
        }
        if case .failure(let error) = firstResult { #expect(error is APIError, "\(error)") }
        if case .failure(let error) = secondResult { #expect(error is APIError, "\(error)") }
    }
}
