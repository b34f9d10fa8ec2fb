import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cancel storms against a real server. On Linux, cancelled `uploadTask(fromFile:)` uploads
/// crashed the process within a few hundred to 1,500 uploads, every run; file bodies now go out
/// from memory or from a stream, which do not.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CancelStormTests {
    private func file(bytes: Int) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tern-storm-\(UUID().uuidString).bin")
        try patterned(bytes: bytes, seed: 7).write(to: url)
        return url
    }

    private func uploads(before: Set<String>) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
            .filter { $0.hasPrefix("tern-upload-") && !before.contains($0) }
    }

    /// Uploads started in waves and cancelled at once or a few milliseconds in; every one
    /// settles, as sent or as cancelled, and no temporary body file is left.
    private func storm(fileSize: Int, waves: Int, perWave: Int) async throws -> [String: Int] {
        let server = try LoopbackServer(keepingBodiesUpTo: 0) { _ in .json("{}") }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let part = try file(bytes: fileSize)
        defer { try? FileManager.default.removeItem(at: part) }
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()))
        var outcomes: [String: Int] = [:]
        for wave in 0..<waves {
            let promises: [Promise<Void>] = (0..<perWave).map { _ in
                api.request(route: api.post(endpoint: "/upload"), parameters: MultipartParameters(parts: [Part(name: "file", fileURL: part)]))
            }
            if wave % 3 != 0 { try await Task.sleep(nanoseconds: UInt64(wave % 5) * 1_000_000) }
            promises.forEach { $0.cancel() }
            for promise in promises {
                outcomes[await apiError(of: promise)?.caseName ?? "sent", default: 0] += 1
            }
        }
        #expect(await eventually { uploads(before: before).isEmpty })
        return outcomes
    }

    /// FoundationNetworking crashes now and then in such a storm of GETs, bare URLSession too
    /// (about 1 run in 12 of 5,000): Tern keeps its own part out of it, and this bounded storm
    /// keeps watch.
    @Test func cancellingRequestsInBulkSettlesEveryOne() async throws {
        let server = try LoopbackServer { _ in .json(#"[{"name": "tern", "price": 3}]"#) }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        var outcomes: [String: Int] = [:]
        for wave in 0..<10 {
            let promises: [Promise<[Product]>] = (0..<50).map { _ in api.request(route: api.get(endpoint: "/products")) }
            if wave % 2 == 1 { try await Task.sleep(nanoseconds: 1_000_000) }
            promises.forEach { $0.cancel() }
            for promise in promises {
                outcomes[await apiError(of: promise)?.caseName ?? "sent", default: 0] += 1
            }
        }
        #expect(outcomes.values.reduce(0, +) == 500)
        #expect(Set(outcomes.keys).isSubset(of: ["sent", "cancelled"]))
    }

    #if os(Linux)
    /// Compressed answers cancelled in bulk as they are decoded: every one settles, decoded
    /// whole or cancelled, and the decoders freed mid-stream take nothing down.
    @Test func cancellingCompressedAnswersInBulkSettlesEveryOne() async throws {
        let text = Data((0..<40_000).map { "line \($0) of a compressed answer\n" }.joined().utf8)
        let gzip = [UInt8](GzipStream.compressed(text))
        let begun = Recorder<Int>()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                begun.append(1)
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(gzip.count)\r\n\r\n") else { return }
                // In pieces, so that cancels land while the body is being decoded.
                for start in stride(from: 0, to: gzip.count, by: 8_192) {
                    guard connection.send(Array(gzip[start..<min(start + 8_192, gzip.count)])) else { return }
                    connection.pause(1)
                }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        var outcomes: [String: Int] = [:]
        for wave in 0..<8 {
            let sent = begun.items.count
            let promises: [Promise<Data>] = (0..<40).map { _ in api.request(route: .get(server.baseURL + "/compressed")) }
            // Every other wave, once four requests have reached the server (two of them to be
            // cancelled, their answers under way); the others at once.
            if wave % 2 == 1 { _ = await eventually { begun.items.count >= sent + 4 } }
            promises.enumerated().forEach { index, promise in if index % 3 != 0 { promise.cancel() } }
            for promise in promises {
                switch await promise.result {
                case .success(let body): outcomes[body == text ? "whole" : "wrong", default: 0] += 1
                case .failure(let error): outcomes[(error as? APIError)?.caseName ?? "\(error)", default: 0] += 1
                }
            }
        }
        #expect(outcomes.values.reduce(0, +) == 320)
        #expect(Set(outcomes.keys).isSubset(of: ["whole", "cancelled"]), "\(outcomes)")
        #expect(outcomes["whole", default: 0] >= 8 * 14, "\(outcomes)")
        // Some were cancelled while their answers came.
        #expect(begun.items.count > outcomes["whole", default: 0], "\(begun.items.count) begun")
    }
    #endif

    @Test func cancellingFileUploadsInBulkDoesNotCrash() async throws {
        let outcomes = try await storm(fileSize: 256 << 10, waves: 30, perWave: 50)
        #expect(outcomes.values.reduce(0, +) == 1500)
        #expect(Set(outcomes.keys).isSubset(of: ["sent", "cancelled"]))
        #expect(outcomes["cancelled", default: 0] > 0)
    }

    /// Files over the in-memory limit are streamed: the same storm, smaller, for that path.
    @Test func cancellingStreamedUploadsInBulkDoesNotCrash() async throws {
        let outcomes = try await storm(fileSize: URLSessionTransport.inMemoryUploadLimit + 1, waves: 6, perWave: 20)
        #expect(outcomes.values.reduce(0, +) == 120)
        #expect(Set(outcomes.keys).isSubset(of: ["sent", "cancelled"]))
    }

    /// A large streamed body goes out with one framing, never a `Content-Length` beside chunks:
    /// the two together would frame the message twice. FoundationNetworking can only send it
    /// chunked; libcurl sends the length Tern knows. (Linux only: Apple platforms upload from the
    /// file.)
    #if canImport(FoundationNetworking)
    @Test func aStreamedUploadArrivesWholeWithOneFraming() async throws {
        let size = URLSessionTransport.inMemoryUploadLimit + 1
        let part = try file(bytes: size)
        defer { try? FileManager.default.removeItem(at: part) }
        let api = try TestAPI()
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: "/multipart"),
                                                        parameters: MultipartParameters(parts: [Part(name: "file", fileURL: part)])).value
        if TestTransport.isCurl {
            #expect(echo.transferEncoding == nil)
            #expect(echo.contentLength.flatMap(Int.init) ?? 0 > size)
        } else {
            #expect(echo.transferEncoding == "chunked")
            #expect(echo.contentLength == nil)
        }
        #expect(echo.parts.first?.size == size)
        #expect(echo.parts.first?.checksum == fnv1a(try Data(contentsOf: part)))
    }
    #endif
}
