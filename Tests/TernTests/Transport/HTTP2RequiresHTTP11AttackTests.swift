#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// A server that refuses every HTTP/2 stream with RST_STREAM HTTP_1_1_REQUIRED (RFC 9113,
/// 0xd) once its request came whole, and answers over HTTP/1.1 on any connection that did not
/// negotiate `h2`. libcurl goes down to HTTP/1.1 on a new connection by itself.
///
/// Promised: every promise settles exactly once with its answer or a typed `APIError` that
/// says what went wrong; a body sent again goes whole and unchanged (Uploads and downloads).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2RequiresHTTP11AttackTests {
    typealias Item = HTTP2MultiplexAttackTests.Item

    /// What the server saw: each request's protocol, request line and body.
    struct Seen: Equatable {
        let overHTTP2: Bool
        let line: String
        let body: Data
    }

    final class Server: @unchecked Sendable {
        let certificates: TestCertificates
        private let lock = NSLock()
        private var seenRequests: [Seen] = []
        private var tls: RelayedRawServer?
        /// Run once a stream's request came whole, before it is refused.
        private let beforeRefusing: @Sendable () -> Void
        static let answer = Data(#"{"name":"again"}"#.utf8)

        init(beforeRefusing: @escaping @Sendable () -> Void = {}) throws {
            self.beforeRefusing = beforeRefusing
            certificates = try TestCertificates()
            tls = try RelayedRawServer(certificates: certificates) { [weak self] connection in self?.serve(connection.socket) }
        }

        var url: String { tls?.url ?? "" }
        var seen: [Seen] { lock.withLock { seenRequests } }

        private func serve(_ socket: Int32) {
            var buffer = Data()
            guard read(socket, into: &buffer, atLeast: 24) else { return }
            if buffer.starts(with: Data("PRI * HTTP/2.0".utf8)) {
                serveHTTP2(socket, buffer: buffer)
            } else {
                serveHTTP11(socket, buffer: buffer)
            }
        }

        private func read(_ socket: Int32, into buffer: inout Data, atLeast count: Int) -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while buffer.count < count {
                let read = recv(socket, &chunk, chunk.count, 0)
                guard read > 0 else { return false }
                buffer.append(contentsOf: chunk[0..<read])
            }
            return true
        }

        private func send(_ socket: Int32, _ bytes: Data) {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[(bytes.startIndex + sent)...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return }
                sent += count
            }
        }

        private func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: Data) -> Data {
            var frame = Data([UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), type, flags])
            frame.append(contentsOf: [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)])
            frame.append(payload)
            return frame
        }

        private func serveHTTP2(_ socket: Int32, buffer start: Data) {
            var buffer = Data(start.dropFirst(24))
            var bodies: [UInt32: Data] = [:]
            send(socket, frame(4, 0, 0, Data()))
            while true {
                guard read(socket, into: &buffer, atLeast: 9) else { return }
                let header = [UInt8](buffer.prefix(9))
                let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                guard read(socket, into: &buffer, atLeast: 9 + length) else { return }
                let (type, flags) = (header[3], header[4])
                let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
                let payload = Data(buffer.dropFirst(9).prefix(length))
                buffer = Data(buffer.dropFirst(9 + length))
                switch type {
                case 4 where flags & 1 == 0:
                    send(socket, frame(4, 1, 0, Data()))
                case 6 where flags & 1 == 0:
                    send(socket, frame(6, 1, 0, payload))
                case 0, 1:
                    if type == 0 {
                        bodies[stream, default: Data()].append(payload)
                        if !payload.isEmpty {
                            let credit = HTTP2MultiplexAttackTests.ScriptedServer.windowUpdate(UInt32(payload.count))
                            send(socket, frame(8, 0, 0, credit) + frame(8, 0, stream, credit))
                        }
                    }
                    if flags & 1 != 0 {
                        let body = bodies.removeValue(forKey: stream) ?? Data()
                        lock.withLock { seenRequests.append(Seen(overHTTP2: true, line: "stream \(stream)", body: body)) }
                        beforeRefusing()
                        send(socket, frame(3, 0, stream, Data([0, 0, 0, 0x0d])))
                    }
                default:
                    break
                }
            }
        }

        private func serveHTTP11(_ socket: Int32, buffer start: Data) {
            var buffer = start
            let blank = Data("\r\n\r\n".utf8)
            while true {
                while buffer.range(of: blank) == nil {
                    guard read(socket, into: &buffer, atLeast: buffer.count + 1) else { return }
                }
                let end = buffer.range(of: blank)!.upperBound
                let head = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
                buffer = Data(buffer[end...])
                var length = 0
                for field in head.split(separator: "\r\n") where field.lowercased().hasPrefix("content-length:") {
                    let value: Substring = field.dropFirst("content-length:".count)
                    length = Int(value.trimmingCharacters(in: .whitespaces)) ?? 0
                }
                guard read(socket, into: &buffer, atLeast: length) else { return }
                let body = Data(buffer.prefix(length))
                buffer = Data(buffer.dropFirst(length))
                let line = String(head.prefix { $0 != "\r" })
                lock.withLock { seenRequests.append(Seen(overHTTP2: false, line: line, body: body)) }
                send(socket, Data("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(Self.answer.count)\r\n\r\n".utf8) + Self.answer)
            }
        }
    }

    static func api(_ server: Server) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    /// A GET, refused over HTTP/2, is answered over HTTP/1.1.
    @Test func aGetGoesDownToHTTP11() async throws {
        let server = try Server()
        let api = try Self.api(server)
        let result = await (api.request(route: .get(server.url + "/items")) as Promise<Item>).result
        #expect((try? result.get()) == Item(name: "again"), "\(result)")
        #expect(server.seen.map(\.overHTTP2) == [true, false], "\(server.seen)")
    }

    enum Body: String, CaseIterable, Sendable { case json, multipartFile }

    /// A PUT, refused over HTTP/2 once its body came whole, goes again over HTTP/1.1 with its
    /// whole body, byte for byte the one it sent first (libcurl 7.88 goes down to HTTP/1.1
    /// without taking the body back to its start: the PUT wrote a head and no body, and waited
    /// for its timeout). A POST is not sent again unasked: it fails typed, sent once.
    @Test(arguments: ["PUT", "POST"], Body.allCases)
    func anUploadGoesAgainWhole(method: String, body: Body) async throws {
        let server = try Server()
        let api = try Self.api(server)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h11-required-\(UUID()).bin")
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let parameters: any RequestParameters = switch body {
        case .json: JSONParameters(["text": String(repeating: "tern ", count: 20_000)])
        case .multipartFile: MultipartParameters(parts: [Part(name: "file", fileURL: file), Part(name: "caption", value: "front")])
        }
        let route = Route(method: HTTPMethod(rawValue: method), url: server.url + "/upload")
        let result = await (api.request(route: route, parameters: parameters) as Promise<Item>).result
        let seen = server.seen
        if method == "PUT" {
            #expect((try? result.get()) == Item(name: "again"), "\(result)")
            #expect(seen.map(\.overHTTP2) == [true, false], "\(seen)")
            #expect(seen.count == 2 && seen[1].body == seen[0].body && seen[0].body.count > 100_000,
                    "sent \(seen.map(\.body.count)) bytes")
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result)")
                return
            }
            #expect(failure.urlError?.code == .networkConnectionLost, "\(failure)")
            #expect(seen.map(\.overHTTP2) == [true], "\(seen)")
        }
    }

    /// A download to a file, refused over HTTP/2, lands whole over HTTP/1.1.
    @Test func aDownloadGoesDownToHTTP11() async throws {
        let server = try Server()
        let api = try Self.api(server)
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h11-required-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: destination) }
        let result = await api.download(route: .get(server.url + "/export"), to: destination).result
        #expect((try? result.get()) != nil, "\(result)")
        #expect((try? Data(contentsOf: destination)) == Server.answer)
    }

    /// A streamed GET, refused over HTTP/2, is read whole over HTTP/1.1, line by line.
    @Test func aStreamGoesDownToHTTP11() async throws {
        let server = try Server()
        let api = try Self.api(server)
        var lines: [String] = []
        for try await line in api.stream(route: .get(server.url + "/feed")).lines { lines.append(line) }
        #expect(lines == [String(decoding: Server.answer, as: UTF8.self)])
        #expect(server.seen.map(\.overHTTP2) == [true, false], "\(server.seen)")
    }

    typealias Change = UploadFileChangeAttackTests.Change

    /// A PUT of a file, refused over HTTP/2 once its body came whole, whose file changes before
    /// libcurl goes down to HTTP/1.1 and sends it again: the second request carries one version
    /// of the file whole, or the upload fails typed (never at its timeout: that would mean the
    /// client announced bytes it never sent). "A body sent again goes whole and unchanged".
    @Test(arguments: Change.allCases, [false, true])
    func aFileChangedBeforeItGoesDownToHTTP11IsSentWholeOrFailsTyped(change: Change, multipart: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h11-changing-\(UUID())")
        let elsewhere = directory.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload")
        try UploadFileChangeAttackTests.before.write(to: file)
        let server = try Server { try? UploadFileChangeAttackTests.make(change, to: file, elsewhere: elsewhere) }
        let api = try Self.api(server)
        let parameters: any RequestParameters = multipart ? MultipartParameters(parts: [Part(name: "f", fileURL: file)]) : BodyParameters(file)
        let result = await (api.request(route: .put(server.url + "/upload"), parameters: parameters) as Promise<Item>).result
        let seen = server.seen
        #expect(seen.first.map { UploadFileChangeAttackTests.counts($0.body) } == [1000, 0], "\(seen)")
        switch result {
        case .success(let item):
            #expect(item == Item(name: "again"))
            #expect(seen.count == 2, "\(seen)")
            if seen.count == 2 {
                let counts = UploadFileChangeAttackTests.counts(seen[1].body)
                #expect(UploadFileChangeAttackTests.wholeVersions(after: change).contains(counts), "\(change): the server read \(counts) of the file")
            }
        case .failure(let error):
            #expect(error is APIError, "\(change): \(error)")
            if case .timeout? = error as? APIError { Issue.record("\(change): the upload waited for bytes it had announced: \(error)") }
            #expect(seen.map(\.overHTTP2) == [true], "\(change): \(seen)")
        }
    }
}
#endif
