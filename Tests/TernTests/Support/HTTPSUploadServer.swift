#if os(Linux)
import Foundation

/// HTTPS that reads request bodies: `openssl s_server` does TLS, one connection at a time, and
/// hands the decrypted bytes to this process, which reads each HTTP/1.1 request (its head and
/// its `Content-Length` body) and answers "ok", closing the connection, so that s_server takes
/// the next one. (s_server's own `-www` answers without reading a body.)
final class HTTPSUploadServer: @unchecked Sendable {
    let certificates: TestCertificates
    let port: Int
    private let process: Process
    private let toServer = Pipe()
    private let fromServer = Pipe()
    private let lock = NSLock()
    private var lengths: [Int] = []

    init() throws {
        certificates = try TestCertificates()
        port = try TestCertificates.freePort()
        process = try certificates.server(on: port, [], input: toServer, output: fromServer)
        let input = fromServer.fileHandleForReading
        Thread { [weak self] in
            var buffer = Data()
            while true {
                let chunk = input.availableData
                guard !chunk.isEmpty, let self else { return }
                buffer.append(chunk)
                while let consumed = self.answerNext(in: buffer) { buffer.removeFirst(consumed) }
            }
        }.start()
    }

    deinit {
        stopServer(process)
    }

    var url: String { "https://127.0.0.1:\(port)" }

    /// The body lengths of the requests answered, in order.
    var bodyLengths: [Int] { lock.withLock { lengths } }

    func waitUntilListening() async throws {
        for _ in 0..<200 {
            if TestCertificates.accepts(port) { return }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
        throw TestError()
    }

    /// Answers the request at the start of `buffer`; returns its length, or `nil` until it has
    /// all arrived.
    private func answerNext(in buffer: Data) -> Int? {
        guard let end = buffer.firstRange(of: Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
        let length = head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
        let total = end.upperBound - buffer.startIndex + length
        guard buffer.count >= total else { return nil }
        lock.withLock { lengths.append(length) }
        toServer.fileHandleForWriting.write(Data("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
        return total
    }
}
#endif
