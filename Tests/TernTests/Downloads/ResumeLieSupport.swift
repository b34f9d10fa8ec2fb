import Foundation
import Testing
@testable import Tern
import TernTesting

/// What the resume attacks share: a server whose every answer a test writes, a directory of the
/// test's own, and the bodies of two versions of one file.
enum ResumeLie {
    /// A loopback server that answers each request (its index counting from 1) with the bytes
    /// `answer` makes, and records the requests' heads as they came. After the answers that
    /// `closesAfter` names, it closes the connection (an answer cut short ends there).
    final class Server: Sendable {
        let raw: RawServer
        let requests = Recorder<String>()

        init(closesAfter: @escaping @Sendable (_ index: Int) -> Bool = { _ in false },
             _ answer: @escaping @Sendable (_ request: String, _ index: Int) -> [UInt8]) throws {
            let requests = requests
            let count = Locked(0)
            raw = try RawServer { connection in
                while let request = connection.readRequest() {
                    requests.append(request)
                    let index = count.withLock { $0 += 1; return $0 }
                    guard connection.send(answer(request, index)), !closesAfter(index) else { return }
                }
            }
        }

        var url: String { raw.baseURL }

        func stop() { raw.stop() }

        /// The value of `name` in each request received, `nil` where it was not sent.
        func header(_ name: String) -> [String?] {
            requests.items.map { ResumeLie.header(name, in: $0) }
        }
    }

    /// The value of the header `name` in a request's head, if it has it.
    static func header(_ name: String, in request: String) -> String? {
        let prefix = name.lowercased() + ":"
        return request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(prefix) }
            .map { $0.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces) }
    }

    /// A response: `status`, `headers` (each ending in CRLF), a `Content-Length` of `body`
    /// unless `length` says otherwise, and the body.
    static func answer(_ status: String, _ headers: String = "", body: Data = Data(), length: Int? = nil) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\n\(headers)Content-Length: \(length ?? body.count)\r\n\r\n".utf8) + [UInt8](body)
    }

    /// The answer to a request for `body` (ETag `"v1"`): the whole file, as `rest` with no
    /// `head`, when it asks for no range (a download that started over); otherwise a 206's head
    /// and the bytes from the range's start, which the caller sends as it likes.
    static func ranged(_ request: String, of body: Data) -> (head: [UInt8], rest: [UInt8]) {
        guard let range = header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()) else {
            return ([], answer("200 OK", "ETag: \"v1\"\r\n", body: body))
        }
        let rest = [UInt8](body.suffix(from: start))
        return (Array("HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Range: bytes \(start)-\(body.count - 1)/\(body.count)\r\nContent-Length: \(rest.count)\r\n\r\n".utf8), rest)
    }

    /// The file's bytes in `version`: the two versions share their first `shared` bytes, and
    /// differ in every byte after.
    static func body(_ version: Int, bytes: Int = 3000, shared: Int = 2000) -> Data {
        Data((0..<bytes).map { index in
            let base = UInt8(truncatingIfNeeded: index &* 7 &+ index >> 8)
            return index < shared || version == 1 ? base : base ^ 0x5A
        })
    }

    /// A directory of the test's own, removed when it ends.
    final class Directory: Sendable {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tern-resume-lie-\(UUID().uuidString)")

        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }

        deinit {
            // A test may have left it read-only, or a link in it.
            chmod(url.path, 0o755)
            try? FileManager.default.removeItem(at: url)
        }

        var destination: URL { url.appendingPathComponent("file.bin") }

        /// The names of the files in the directory, hidden ones included.
        var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }

        /// The partial files Tern keeps here.
        var partialFiles: [URL] { files.filter { $0.hasSuffix(".tern-partial") }.map { url.appendingPathComponent($0) } }

        /// A resume of the first `offset` bytes of `body`, as Tern keeps one, under `validator`.
        func resume(of body: Data, offset: Int, validator: String = #""v1""#, from url: String) throws -> ResumableDownload {
            let partial = ResumableDownload.partialFile(for: destination)
            try body.prefix(offset).write(to: partial)
            let resume = ResumableDownload(url: URL(string: url)!, destination: destination, partialFile: partial,
                                           offset: Int64(offset), validator: validator)
            try resume.record()
            return resume
        }
    }

    /// Parameters that only set headers.
    struct Headers: RequestParameters {
        let values: [String: String]
        var headers: HTTPHeaders { HTTPHeaders(values.map { ($0.key, $0.value) }) }
        func encode(into draft: inout RequestDraft) throws {}
    }

    /// The API the attacks download with: no retries unless asked.
    static func api(retryPolicy: RetryPolicy = .never) throws -> TestAPI {
        try TestAPI(baseURL: "http://127.0.0.1:1", configuration: APIConfiguration(timeout: 30, retryPolicy: retryPolicy))
    }
}

extension ResumeLie {
    /// A value shared between a test and its server's threads.
    final class Shared<Value: Sendable>: Sendable {
        private let locked: Locked<Value>

        init(_ value: Value) { locked = Locked(value) }

        var value: Value {
            get { locked.withLock { $0 } }
            set { locked.withLock { $0 = newValue } }
        }

        func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { locked.withLock(body) }
    }
}
