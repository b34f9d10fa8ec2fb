import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file to upload that changes between the request and its sending, as a file body and as a
/// multipart part: cut short, grown, replaced by a rename, by a link to a larger file elsewhere
/// or to a device, by a directory, or deleted while the upload waited for a connection. Each
/// upload settles once, whole from one version of the file or with a typed error (never the
/// request's timeout: that would mean the client announced bytes it never sent), and the server
/// never reads a request it was not sent.
/// One case at a time: each holds a host's connections with uploads the server keeps waiting.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(1))) struct UploadFileChangeAttackTests {
    enum Change: String, CaseIterable, Sendable {
        case truncated, grown, renamedOver, linkedElsewhere, linkedToADevice, directory, deleted
    }

    /// The file's bytes: `1` before the change, `2` in what replaces or extends it.
    static let before = Data(repeating: 1, count: 1000)

    /// What the server may read of the file after `change`, as counts of `1` and `2` bytes:
    /// what was there when the request was made, or what is there when it is sent.
    static func wholeVersions(after change: Change) -> Set<[Int]> {
        switch change {
        case .truncated: [[1000, 0], [500, 0]]
        case .grown: [[1000, 0], [1000, 1000]]
        case .renamedOver: [[1000, 0], [0, 3000]]
        case .linkedElsewhere: [[1000, 0], [0, 5000]]
        case .linkedToADevice, .directory, .deleted: [[1000, 0]]
        }
    }

    /// Makes `change` to `file`; `elsewhere` is a directory outside the file's, for the link.
    static func make(_ change: Change, to file: URL, elsewhere: URL) throws {
        switch change {
        case .truncated:
            #expect(truncate(file.path, 500) == 0)
        case .grown:
            let handle = try FileHandle(forWritingTo: file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 2, count: 1000))
            try handle.close()
        case .renamedOver:
            let next = file.appendingPathExtension("next")
            try Data(repeating: 2, count: 3000).write(to: next)
            #expect(rename(next.path, file.path) == 0)
        case .linkedElsewhere:
            let target = elsewhere.appendingPathComponent("outside")
            try Data(repeating: 2, count: 5000).write(to: target)
            let link = file.appendingPathExtension("link")
            #expect(symlink(target.path, link.path) == 0)
            #expect(rename(link.path, file.path) == 0)
        case .linkedToADevice:
            // A device that never ends: read as the file, the body would never end.
            let link = file.appendingPathExtension("link")
            #expect(symlink("/dev/zero", link.path) == 0)
            #expect(rename(link.path, file.path) == 0)
        case .directory:
            #expect(unlink(file.path) == 0)
            #expect(mkdir(file.path, 0o700) == 0)
        case .deleted:
            #expect(unlink(file.path) == 0)
        }
    }

    /// Counts of `1` and `2` bytes in `body`.
    static func counts(_ body: Data) -> [Int] {
        var counts = [0, 0]
        for byte in body where byte == 1 || byte == 2 { counts[Int(byte) - 1] += 1 }
        return counts
    }

    /// Over HTTPS too (libcurl, trusting the test's authority), where libcurl, not Tern, counts
    /// the host's connections.
    static let overTLS: [Bool] = TestTransport.isCurl ? [false, true] : [false]

    @Test(arguments: Change.allCases, [false, true])
    func aFileChangedWhileItsUploadWaitsIsSentWholeFromOneVersionOrFailsTyped(change: Change, multipart: Bool) async throws {
        for tls in Self.overTLS { try await changeWhileWaiting(change, multipart: multipart, tls: tls) }
    }

    func changeWhileWaiting(_ change: Change, multipart: Bool, tls: Bool) async throws {
        let gate = DispatchSemaphore(value: 0)
        let held = Recorder<Int>()
        let received = Recorder<RecordedRequest>()
        let server = try LoopbackServer { request in
            received.append(request)
            guard request.path == "/up" else { return .text("free") }
            held.append(request.bodyLength)
            gate.wait()
            return .text(Self.counts(request.body).map(String.init).joined(separator: ","))
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-changing-\(UUID())")
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("tern-elsewhere-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory); try? FileManager.default.removeItem(at: elsewhere) }
        let file = directory.appendingPathComponent("upload")
        try Self.before.write(to: file)
        #if os(Linux)
        let certificates = tls ? try TestCertificates() : nil
        let relay = try certificates.map { try TLSRelay(certificates: $0, to: server.port) }
        defer { relay?.stop() }
        let baseURL = relay?.baseURL ?? server.baseURL
        let transport: (any Transport)? = try certificates.map { try CurlTransport(trusting: $0.authority) } ?? TestTransport.make()
        #else
        let (baseURL, transport) = (server.baseURL, TestTransport.make())
        #endif
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: transport, responseQueue: .global())
        let parameters: any RequestParameters = multipart ? MultipartParameters(parts: [Part(name: "f", fileURL: file)]) : BodyParameters(file)
        let uploads = (0..<12).map { _ in api.request(route: .post(baseURL + "/up"), parameters: parameters) as Promise<String> }
        // The host's connections are taken by uploads the server holds; the rest wait.
        #expect(await eventually { held.items.count >= 4 })
        try Self.make(change, to: file, elsewhere: elsewhere)
        for _ in 0..<12 { gate.signal() }
        let free: String = try await api.request(route: .get(baseURL + "/free")).value
        #expect(free == "free")
        let versions = Self.wholeVersions(after: change)
        var (failed, changed) = (0, 0)
        for upload in uploads {
            switch await upload.result {
            case .success(let answer):
                let counts = answer.split(separator: ",").compactMap { Int($0) }
                #expect(versions.contains(counts), "\(change), TLS \(tls): the server read \(answer) of the file")
                changed += counts == [1000, 0] ? 0 : 1
            case .failure(let error):
                failed += 1
                #expect(error is APIError, "\(change), TLS \(tls): \(error)")
                if case .timeout? = error as? APIError { Issue.record("\(change), TLS \(tls): an upload waited for bytes it had announced: \(error)") }
            }
        }
        // The uploads that waited saw the change (the test is not only of those sent before it).
        #expect(failed + changed > 0, "\(change), TLS \(tls): every upload sent the file as it was before")
        // Every request the server read is one the client sent; none was read twice.
        #expect(received.items.allSatisfy { $0.path == "/up" || $0.path == "/free" }, "\(received.items.map(\.target))")
        #expect(received.items.count(where: { $0.path == "/up" }) == 12 - failed)
        // The link's target, outside, is where it was, as it was.
        if change == .linkedElsewhere {
            #expect(try Data(contentsOf: elsewhere.appendingPathComponent("outside")) == Data(repeating: 2, count: 5000))
        }
    }

    /// What a server read of an upload of `size` bytes of file, made with `parameters`, whose
    /// file grew by a whole request once the head had arrived: the upload's result, the length
    /// its head announced (-1 for none), how many bytes came after the head up to that length
    /// (however long they take to come), and the last 64 KiB of those with what follows within
    /// half a second.
    static func growWhileSent(size: Int, _ parameters: (URL) -> any RequestParameters) async throws
        -> (result: Result<Void, APIError>, announced: Int, received: Int, tail: [UInt8]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-growing-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        // Sparse, so that neither writing nor reading it costs.
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let sized = try FileHandle(forWritingTo: file)
        try sized.truncate(atOffset: UInt64(size))
        try sized.close()
        let (headArrived, grown) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let received = Recorder<(announced: Int, count: Int, tail: [UInt8])>()
        let server = try RawServer { connection in
            guard let head = connection.readHead() else { return }
            headArrived.signal()
            grown.wait()
            let announced = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? -1
            // All but the announced body's last 64 KiB dropped as they come: kept and searched
            // whole, 64 MiB took seconds of both cores. Then the rest, and whatever follows.
            let dropped = announced > 65_536 ? connection.discard(announced - 65_536, within: 30) : 0
            let tail = connection.readAvailable(for: 30, limit: announced < 0 ? .max : announced - dropped)
                + connection.readAvailable(for: 0.5, limit: .max)
            received.append((announced, dropped + tail.count, tail))
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let upload: Promise<Void> = api.request(route: .put(server.baseURL + "/upload"), parameters: parameters(file))
        #expect(headArrived.wait(timeout: .now() + 10) == .success)
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        try handle.close()
        grown.signal()
        let result = await upload.result.mapError { $0 as? APIError ?? .cancelled }
        #expect(await eventually { !received.items.isEmpty })
        let (announced, count, tail) = received.items.first ?? (-2, 0, [])
        return (result, announced, count, tail)
    }

    /// A multipart part's file that grows while it is sent, what it grew by a whole request: the
    /// part stops at the file's length as it was, so that the server reads either the whole body
    /// as announced, ending with its closing boundary, or less, and never the added bytes.
    @Test func aPartsFileThatGrowsWhileItIsSentSendsNoneOfWhatItGrewBy() async throws {
        let (result, announced, received, tail) = try await Self.growWhileSent(size: 32 << 20) { MultipartParameters(parts: [Part(name: "f", fileURL: $0)]) }
        if case .failure(let error) = result {
            #expect(error.underlyingError is BodyLengthMismatch, "\(error)")
        }
        let text = String(decoding: tail.suffix(65_536), as: UTF8.self)
        #expect(!text.contains("/smuggled"), "the server read what the file grew by: \(text.suffix(200))")
        // With a length (URLSession on Linux sends a body this large chunked, with none).
        guard announced >= 0 else { return }
        #expect(received <= announced, "the server read \(received) bytes of \(announced) announced")
        if received == announced { #expect(text.hasSuffix("--\r\n"), "a whole body that does not end with its boundary: \(text.suffix(80))") }
    }
}
