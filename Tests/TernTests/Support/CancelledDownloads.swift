import Foundation
import Testing
@testable import Tern
import TernTesting

/// Rounds of a download cancelled somewhere along the way, for the suites that attack a cancel
/// near the end of a download (LastByteCancelAttackTests, CancelVisibilityAttackTests,
/// ChainedCancelVisibilityAttackTests): one server of a 120 000-byte file, one API, a fresh
/// directory a round, and a check of what each round left there.
enum CancelledDownloads {
    static let size = 120_000
    static let body = patterned(bytes: size, seed: 49)

    /// Runs `rounds` rounds, each in a directory of its own under a temporary one named after
    /// `name`: `download` downloads `route` to `destination` and cancels it its own way; what it
    /// heard is checked (see `check`). Returns how many rounds went which way.
    static func run(_ rounds: Int, name: String,
                    download: (_ api: AbstractAPI, _ route: Route, _ destination: URL, _ round: Int) async throws
                        -> Result<DownloadedFile, any Error>) async throws -> [String: Int] {
        let server = try LoopbackServer { request in ServerResponse.file(body, for: request, etag: "\"v49\"") }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-\(name)-\(UUID())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        var outcomes: [String: Int] = [:]
        for round in 0..<rounds {
            let directory = root.appendingPathComponent("\(round)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            let destination = directory.appendingPathComponent("file.bin")
            let result = try await download(api, .get(server.baseURL + "/file"), destination, round)
            let outcome = try await check(result, destination: destination, in: directory, api: api, round: round)
            outcomes[outcome, default: 0] += 1
        }
        return outcomes
    }

    /// Starts a thread that cancels `promise` once the returned semaphore is signalled (signal it
    /// again when done, to let the thread go if nothing did).
    static func canceller<T>(of promise: Promise<T>) -> DispatchSemaphore {
        let go = DispatchSemaphore(value: 0)
        Thread {
            go.wait()
            promise.cancel()
        }.start()
        return go
    }

    /// Checks what `result` left in `directory`: the whole destination alone, or (cancelled)
    /// nothing, or the kept partial file and its resume record, which read back and resume to the
    /// whole file; never a record beside a finished file, never part of the destination. Returns
    /// which way it went.
    static func check(_ result: Result<DownloadedFile, any Error>, destination: URL, in directory: URL, api: AbstractAPI,
                      round: Int) async throws -> String {
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        let pending = ResumableDownload.pending(for: destination)
        switch result {
        case .success(let file):
            #expect(file.fileURL == destination)
            #expect(files == ["file.bin"], "round \(round): delivered, beside \(files)")
            #expect(FileManager.default.contents(atPath: destination.path) == body, "round \(round)")
            return "delivered"
        case .failure(APIError.cancelled):
            if files.contains("file.bin") {
                #expect(files == ["file.bin"], "round \(round): cancelled as it was moved, beside \(files)")
                #expect(pending == nil, "round \(round): a resume record beside the finished file")
                #expect(FileManager.default.contents(atPath: destination.path) == body, "round \(round): a partial destination")
                return "cancelled, moved"
            }
            guard let pending else {
                #expect(files.isEmpty, "round \(round): no record, but \(files)")
                return "cancelled, nothing kept"
            }
            // The partial file and its record, nothing else.
            #expect(files.count == 2 && files.contains(".file.bin.tern-resume")
                    && files.contains(pending.partialFile.lastPathComponent), "round \(round): \(files)")
            #expect(FileManager.default.contents(atPath: pending.partialFile.path) == body.prefix(Int(pending.offset)), "round \(round)")
            let resumed = try await api.download(route: .get(pending.url.absoluteString), to: destination, resumingFrom: pending).value
            #expect(FileManager.default.contents(atPath: destination.path) == body, "round \(round): resumed")
            #expect(resumed.resumedBytes == pending.offset - 1, "round \(round)")
            let after = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            #expect(after == ["file.bin"], "round \(round): after the resume, \(after)")
            return "cancelled, kept \(pending.offset == Int64(size) ? "all" : "part")"
        case .failure(let error):
            Issue.record("round \(round): \(error)")
            return "failed"
        }
    }
}
