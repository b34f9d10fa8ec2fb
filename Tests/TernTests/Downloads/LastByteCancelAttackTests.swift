import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download cancelled at its last byte, fifty times over, from each place a cancel can come
/// from: its progress handler, another thread told by the progress handler, and the task that
/// awaits it being cancelled. Whatever wins, the directory holds the whole destination alone, or
/// the kept partial file and its resume record, which read back and resume to the whole file;
/// never a record beside a finished file, never part of the destination.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(5))) struct LastByteCancelAttackTests {
    static let size = 120_000
    static let body = patterned(bytes: size, seed: 49)

    enum Place: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case progressHandler, otherThread, awaitingTask
        var testDescription: String { rawValue }
    }

    @Test(arguments: Place.allCases) func aCancelAtTheLastByte(from place: Place) async throws {
        let server = try LoopbackServer { request in ServerResponse.file(Self.body, for: request, etag: "\"v49\"") }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-last-byte-\(UUID())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        var outcomes: [String: Int] = [:]
        for round in 0..<50 {
            let directory = root.appendingPathComponent("\(round)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            let destination = directory.appendingPathComponent("file.bin")
            let route = Route.get(server.baseURL + "/file")
            let result: Result<DownloadedFile, any Error>
            switch place {
            case .progressHandler:
                let promise = api.download(route: route, to: destination)
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(Self.size) { promise.cancel() } }
                result = await promise.result
            case .otherThread:
                let promise = api.download(route: route, to: destination)
                let canceller = DispatchSemaphore(value: 0)
                Thread {
                    canceller.wait()
                    promise.cancel()
                }.start()
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(Self.size) { canceller.signal() } }
                result = await promise.result
                canceller.signal()  // lets the thread go when no report said the last byte
            case .awaitingTask:
                let lastByte = DispatchSemaphore(value: 0)
                let promise = api.download(route: route, to: destination)
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(Self.size) { lastByte.signal() } }
                let waiting = Task.onTestThreads { () async -> Result<DownloadedFile, any Error> in
                    do { return .success(try await promise.value) } catch { return .failure(error) }
                }
                let cancelling = Thread {
                    lastByte.wait()
                    waiting.cancel()
                }
                cancelling.start()
                result = await waiting.value
                lastByte.signal()
            }
            let outcome = try await Self.check(result, destination: destination, in: directory, api: api, round: round)
            outcomes[outcome, default: 0] += 1
        }
        // Which ways it went, for whoever reads the log: every one of them is correct.
        print("LastByteCancelAttackTests \(place): \(outcomes)")
    }

    /// Checks what `result` left in `directory`; returns which way it went.
    static func check(_ result: Result<DownloadedFile, any Error>, destination: URL, in directory: URL, api: AbstractAPI,
                      round: Int) async throws -> String {
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        let pending = ResumableDownload.pending(for: destination)
        switch result {
        case .success(let file):
            #expect(file.fileURL == destination)
            #expect(files == ["file.bin"], "round \(round): delivered, beside \(files)")
            #expect(FileManager.default.contents(atPath: destination.path) == Self.body, "round \(round)")
            return "delivered"
        case .failure(APIError.cancelled):
            if files.contains("file.bin") {
                #expect(files == ["file.bin"], "round \(round): cancelled as it was moved, beside \(files)")
                #expect(pending == nil, "round \(round): a resume record beside the finished file")
                #expect(FileManager.default.contents(atPath: destination.path) == Self.body, "round \(round): a partial destination")
                return "cancelled, moved"
            }
            guard let pending else {
                #expect(files.isEmpty, "round \(round): no record, but \(files)")
                return "cancelled, nothing kept"
            }
            // The partial file and its record, nothing else.
            #expect(files.count == 2 && files.contains(".file.bin.tern-resume")
                    && files.contains(pending.partialFile.lastPathComponent), "round \(round): \(files)")
            #expect(FileManager.default.contents(atPath: pending.partialFile.path) == Self.body.prefix(Int(pending.offset)), "round \(round)")
            let resumed = try await api.download(route: .get(pending.url.absoluteString), to: destination, resumingFrom: pending).value
            #expect(FileManager.default.contents(atPath: destination.path) == Self.body, "round \(round): resumed")
            #expect(resumed.resumedBytes == pending.offset - 1, "round \(round)")
            let after = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            #expect(after == ["file.bin"], "round \(round): after the resume, \(after)")
            return "cancelled, kept \(pending.offset == Int64(Self.size) ? "all" : "part")"
        case .failure(let error):
            Issue.record("round \(round): \(error)")
            return "failed"
        }
    }
}
