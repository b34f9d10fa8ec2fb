#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// HTTP/2 over libcurl, against a server the test drives frame by frame: many requests share
/// one connection (streams have a loop of their own, and so a connection) (an event stream, a download, one cancelled mid-body, one timed out, one reset
/// by the server, one whose DATA runs past its content-length, one under a WINDOW_UPDATE storm),
/// then a GOAWAY names a last stream below one still in flight. Each promise settles with its
/// own answer or a typed error, and the refused stream is sent again or fails typed, never hangs.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct HTTP2MultiplexAttackTests {
    /// A server that records each request stream as it ends, in order, on the connection it came
    /// on, and answers only what the test tells it to, or at once with `again` on connections
    /// from ``autoAnswerFrom``.
    final class ScriptedServer: @unchecked Sendable {
        struct Stream: Equatable {
            let connection: Int
            let id: UInt32
            /// The request's body.
            var body = Data()
        }

        static let again = Data(#"{"name":"again"}"#.utf8)

        let certificates: TestCertificates
        private var tls: RelayedRawServer?
        private let lock = NSLock()
        private let sendLock = NSLock()
        private var sockets: [Int32] = []
        private var seenStreams: [Stream] = []
        private var seenResets: [UInt32] = []
        private var answeringFrom = Int.max

        init() throws {
            certificates = try TestCertificates()
            tls = try RelayedRawServer(certificates: certificates) { [weak self] connection in
                guard let self else { return }
                let index = self.lock.withLock {
                    self.sockets.append(connection.socket)
                    return self.sockets.count - 1
                }
                var buffer = Data()
                var sawPreface = false
                var bodies: [UInt32: Data] = [:]
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while case let count = recv(connection.socket, &chunk, chunk.count, 0), count > 0 {
                    buffer.append(contentsOf: chunk[0..<count])
                    while let consumed = self.handleNext(buffer, connection: index, sawPreface: &sawPreface, bodies: &bodies) {
                        buffer.removeFirst(consumed)
                    }
                }
            }
        }

        var url: String { tls?.url ?? "" }
        /// Requests on connections numbered this or more are answered at once with `again`.
        var autoAnswerFrom: Int {
            get { lock.withLock { answeringFrom } }
            set { lock.withLock { answeringFrom = newValue } }
        }
        var connections: Int { lock.withLock { sockets.count } }
        var streams: [Stream] { lock.withLock { seenStreams } }
        var resets: [UInt32] { lock.withLock { seenResets } }

        private static let preface = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

        private func handleNext(_ buffer: Data, connection: Int, sawPreface: inout Bool, bodies: inout [UInt32: Data]) -> Int? {
            if !sawPreface {
                guard buffer.count >= Self.preface.count, buffer.prefix(Self.preface.count) == Self.preface else { return nil }
                sawPreface = true
                send(on: connection, type: 4, flags: 0, stream: 0, payload: Data())
                return Self.preface.count
            }
            guard buffer.count >= 9 else { return nil }
            let header = [UInt8](buffer.prefix(9))
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            guard buffer.count >= 9 + length else { return nil }
            let type = header[3], flags = header[4]
            let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
            let start = buffer.startIndex + 9
            let payload = Data(buffer[start..<(start + length)])
            switch type {
            case 4 where flags & 1 == 0:
                send(on: connection, type: 4, flags: 1, stream: 0, payload: Data())
            case 6 where flags & 1 == 0:
                send(on: connection, type: 6, flags: 1, stream: 0, payload: payload)
            case 1, 0:
                if type == 0 {
                    bodies[stream, default: Data()].append(payload)
                    // Credit for what came, so that a body of any size goes on.
                    if !payload.isEmpty {
                        send(on: connection, type: 8, flags: 0, stream: 0, payload: Self.windowUpdate(UInt32(payload.count)))
                        send(on: connection, type: 8, flags: 0, stream: stream, payload: Self.windowUpdate(UInt32(payload.count)))
                    }
                }
                if flags & 1 != 0 {
                    let body = bodies.removeValue(forKey: stream) ?? Data()
                    lock.withLock { seenStreams.append(Stream(connection: connection, id: stream, body: body)) }
                    if connection >= autoAnswerFrom { answer(Stream(connection: connection, id: stream), body: Self.again) }
                }
            case 3:
                lock.withLock { seenResets.append(stream) }
            default:
                break
            }
            return 9 + length
        }

        /// Sends one frame, whole, on the connection numbered `connection` from 0.
        func send(on connection: Int, type: UInt8, flags: UInt8, stream: UInt32, payload: Data) {
            var frame = [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), type, flags]
            frame.append(contentsOf: [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)])
            frame.append(contentsOf: payload)
            guard let socket = lock.withLock({ connection < sockets.count ? sockets[connection] : nil }) else { return }
            sendLock.withLock {
                var sent = 0
                while sent < frame.count {
                    let count = frame[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    guard count > 0 else { return }
                    sent += count
                }
            }
        }

        /// HPACK: ":status: 200", then each field as a literal without indexing, its name by its
        /// index in the static table (28 content-length, 31 content-type).
        static func head(_ fields: [(index: Int, value: String)]) -> Data {
            var block = Data([0x88])
            for (index, value) in fields {
                block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
                block.append(contentsOf: value.utf8)
            }
            return block
        }

        func headers(_ stream: Stream, _ fields: [(index: Int, value: String)], ends: Bool = false) {
            send(on: stream.connection, type: 1, flags: ends ? 0x5 : 0x4, stream: stream.id, payload: Self.head(fields))
        }

        /// DATA frames of 16 KiB at most, the last ending the stream if `ends`.
        func data(_ stream: Stream, _ body: Data, ends: Bool) {
            var rest = body
            repeat {
                let part = rest.prefix(16_384)
                rest = rest.dropFirst(part.count)
                send(on: stream.connection, type: 0, flags: ends && rest.isEmpty ? 1 : 0, stream: stream.id, payload: Data(part))
            } while !rest.isEmpty
        }

        func answer(_ stream: Stream, body: Data) {
            headers(stream, [(31, "application/json"), (28, String(body.count))])
            data(stream, body, ends: true)
        }

        static func windowUpdate(_ increment: UInt32) -> Data {
            Data([UInt8(increment >> 24 & 0x7f), UInt8(increment >> 16 & 0xff), UInt8(increment >> 8 & 0xff), UInt8(increment & 0xff)])
        }

        static func goAway(lastStream: UInt32) -> Data {
            Data([UInt8(lastStream >> 24), UInt8(lastStream >> 16 & 0xff), UInt8(lastStream >> 8 & 0xff), UInt8(lastStream & 0xff), 0, 0, 0, 0])
        }
    }

    struct Item: Codable, Equatable {
        let name: String
    }

    /// Waits for the server to see its `count`th request, and returns that one's stream.
    func arrival(_ count: Int, on server: ScriptedServer) async throws -> ScriptedServer.Stream {
        try #require(await eventually { server.streams.count >= count }, "request \(count) never reached the server")
        return server.streams[count - 1]
    }

    @Test func everyStreamOnASharedConnectionSettlesWithItsOwnAnswerThroughAGoAway() async throws {
        let server = try ScriptedServer()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h2-attack-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // 1: an event stream, open across everything that follows.
        let events = Task.onTestThreads {
            var seen: [String] = []
            for try await event in api.stream(route: .get(server.url + "/events")).events { seen.append(event.data) }
            return seen
        }
        let eventStream = try await arrival(1, on: server)
        server.headers(eventStream, [(31, "text/event-stream")])
        server.data(eventStream, Data("data: one\n\n".utf8), ends: false)

        // 2: a download of 40,000 bytes over three DATA frames.
        let fileBody = Data((0..<40_000).map { UInt8($0 % 251) })
        let destination = directory.appendingPathComponent("file.bin")
        let download = api.download(route: .get(server.url + "/file"), to: destination)
        let downloadStream = try await arrival(2, on: server)

        // 3: cancelled mid-body.
        let cancelled: Promise<Data> = api.request(route: .get(server.url + "/cancelled"))
        let cancelledStream = try await arrival(3, on: server)
        server.headers(cancelledStream, [(28, "1000")])
        server.data(cancelledStream, Data(repeating: 0x61, count: 100), ends: false)

        // 4: times out, the server silent.
        let timedOut: Promise<Data> = api.request(route: .get(server.url + "/slow"), options: RequestOptions(timeout: 2))
        _ = try await arrival(4, on: server)

        // 5: reset by the server.
        let reset: Promise<Data> = api.request(route: .get(server.url + "/reset"))
        let resetStream = try await arrival(5, on: server)

        // 6: DATA past its content-length.
        let overlong: Promise<Data> = api.request(route: .get(server.url + "/overlong"))
        let overlongStream = try await arrival(6, on: server)

        // 7: a WINDOW_UPDATE storm on its stream and the connection, then its answer.
        let stormed: Promise<Item> = api.request(route: .get(server.url + "/stormed"))
        let stormedStream = try await arrival(7, on: server)

        // 8 and 9: in flight when the GOAWAY names 8's stream as the last.
        let kept: Promise<Item> = api.request(route: .get(server.url + "/kept"))
        let keptStream = try await arrival(8, on: server)
        let refused: Promise<Item> = api.request(route: .get(server.url + "/refused"))
        let refusedStream = try await arrival(9, on: server)
        // Streams have a loop, and so connections, of their own: the event stream is alone on the
        // first; the other eight share the second.
        #expect(eventStream.connection == 0)
        #expect(server.streams.dropFirst().allSatisfy { $0.connection == 1 }, "\(server.streams.map(\.id))")
        #expect(Set(server.streams.dropFirst().map(\.id)).count == 8)
        #expect(refusedStream.id > keptStream.id)

        server.headers(downloadStream, [(28, String(fileBody.count))])
        server.data(downloadStream, fileBody, ends: true)
        server.send(on: 1, type: 3, flags: 0, stream: resetStream.id, payload: Data([0, 0, 0, 2]))
        server.headers(overlongStream, [(31, "application/json"), (28, "5")])
        server.data(overlongStream, Data(#"{"name":"overlong"}"#.utf8), ends: true)
        for _ in 0..<500 {
            server.send(on: 1, type: 8, flags: 0, stream: 0, payload: ScriptedServer.windowUpdate(1))
            server.send(on: 1, type: 8, flags: 0, stream: stormedStream.id, payload: ScriptedServer.windowUpdate(1))
        }
        server.answer(stormedStream, body: Data(#"{"name":"stormed"}"#.utf8))

        let downloaded = await download.result
        #expect(try downloaded.get().fileURL == destination)
        #expect(FileManager.default.contents(atPath: destination.path) == fileBody)

        cancelled.cancel()
        let cancelledResult = await cancelled.result
        guard case .failure(APIError.cancelled) = cancelledResult else {
            Issue.record("the cancelled request: \(cancelledResult)")
            return
        }
        let timedOutResult = await timedOut.result
        guard case .failure(APIError.timeout) = timedOutResult else {
            Issue.record("the timed-out request: \(timedOutResult)")
            return
        }
        let resetResult = await reset.result
        guard case .failure(APIError.transportFailed) = resetResult else {
            Issue.record("the reset request: \(resetResult)")
            return
        }
        let overlongResult = await overlong.result
        guard case .failure(APIError.transportFailed(let failure)) = overlongResult else {
            Issue.record("the overlong request: \(overlongResult)")
            return
        }
        #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
        #expect(try await stormed.value == Item(name: "stormed"))

        // The GOAWAYs: on the second connection, stream 8 goes on and 9 was never handled; on
        // the first, the event stream goes on. Requests from now on are answered at once.
        server.autoAnswerFrom = 2
        server.send(on: 1, type: 7, flags: 0, stream: 0, payload: ScriptedServer.goAway(lastStream: keptStream.id))
        server.send(on: 0, type: 7, flags: 0, stream: 0, payload: ScriptedServer.goAway(lastStream: eventStream.id))
        server.answer(keptStream, body: Data(#"{"name":"kept"}"#.utf8))
        #expect(try await kept.value == Item(name: "kept"))
        server.data(eventStream, Data("data: two\n\n".utf8), ends: true)
        let eventsResult = await events.result
        #expect(try eventsResult.get() == ["one", "two"], "\(eventsResult)")
        // The refused one is sent again on a new connection, or fails typed.
        switch await refused.result {
        case .success(let item):
            #expect(item == Item(name: "again"))
            #expect(server.streams.contains { $0.connection >= 2 })
        case .failure(let error):
            #expect(error is APIError, "\(error)")
            guard case APIError.transportFailed = error else {
                Issue.record("the refused request: \(error)")
                return
            }
        }
        // Whatever came before, the API still answers.
        #expect(try await (api.request(route: .get(server.url + "/after")) as Promise<Item>).value == Item(name: "again"))
    }

    /// A stream the server refuses (RST_STREAM, REFUSED_STREAM) after its whole body came:
    /// libcurl may send it again, which takes the body back to its start. An idempotent PUT
    /// goes again with its whole body, from memory, a file or a stream; a POST is not sent
    /// again unasked and fails typed. Never a part of the body, never a hang.
    @Test(arguments: ["PUT", "POST"], ["memory", "file", "stream"]) func aRefusedStreamGoesAgainWithItsWholeBodyOrFailsTyped(method: String, source: String) async throws {
        let server = try ScriptedServer()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h2-refused-\(UUID())")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let parameters: any RequestParameters = switch source {
        case "file": BodyParameters(file, contentType: "application/octet-stream")
        case "stream": BodyParameters(length: Int64(body.count), contentType: "application/octet-stream") { InputStream(data: body) }
        default: BodyParameters(body, contentType: "application/octet-stream")
        }
        let route: Route = method == "PUT" ? .put(server.url + "/refused") : .post(server.url + "/refused")
        let sent: Promise<Item> = api.request(route: route, parameters: parameters)
        let refused = try await arrival(1, on: server)
        #expect(refused.body == body)
        server.autoAnswerFrom = 0
        server.send(on: refused.connection, type: 3, flags: 0, stream: refused.id, payload: Data([0, 0, 0, 7]))
        let result = await sent.result
        switch result {
        case .success(let item):
            #expect(item == Item(name: "again"))
            #expect(method == "PUT", "a POST was sent again unasked")
            #expect(server.streams.count == 2)
            #expect(server.streams.last?.body == body, "the body sent again: \(server.streams.last?.body.count ?? -1) bytes")
        case .failure(APIError.transportFailed):
            #expect(method == "POST", "\(result)")
            #expect(server.streams.count == 1)
        case .failure(let error):
            Issue.record("\(error)")
        }
    }

    /// A download whose DATA runs past its content-length, or ends short of it: it fails typed,
    /// the destination is never written, and any bytes kept are the body's start.
    @Test(arguments: [(declared: 1_000, sent: 2_000), (declared: 2_000, sent: 1_000)])
    func aDownloadWhoseDataIsNotItsContentLengthWritesNoFile(declared: Int, sent: Int) async throws {
        let server = try ScriptedServer()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h2-lie-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("file.bin")
        let body = Data((0..<sent).map { UInt8(truncatingIfNeeded: $0) })
        let download = api.download(route: .get(server.url + "/file"), to: destination)
        let stream = try await arrival(1, on: server)
        server.headers(stream, [(28, String(declared))])
        server.data(stream, body, ends: true)
        let result = await download.result
        guard case .failure(APIError.transportFailed) = result else {
            Issue.record("\(declared) declared, \(sent) sent: \(result)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        if let kept = ResumableDownload.pending(for: destination) {
            #expect(kept.offset <= Int64(min(declared, sent)))
            #expect(FileManager.default.contents(atPath: kept.partialFile.path) == body.prefix(Int(kept.offset)))
            kept.discard()
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        #expect(left.isEmpty, "\(left)")
    }

    /// A GOAWAY naming no stream (last stream 0) while three requests wait on the connection:
    /// none was handled, and each is sent again on a new connection or fails typed.
    @Test func aGoAwayRefusingEveryStreamInFlightLeavesNoneHanging() async throws {
        let server = try ScriptedServer()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        var promises: [Promise<Item>] = []
        for number in 1...3 {
            promises.append(api.request(route: .get(server.url + "/wait\(number)")))
            _ = try await arrival(number, on: server)
        }
        #expect(server.streams.allSatisfy { $0.connection == 0 })
        server.autoAnswerFrom = 1
        server.send(on: 0, type: 7, flags: 0, stream: 0, payload: ScriptedServer.goAway(lastStream: 0))
        for promise in promises {
            switch await promise.result {
            case .success(let item):
                #expect(item == Item(name: "again"))
            case .failure(let error):
                guard case APIError.transportFailed = error else {
                    Issue.record("\(error)")
                    continue
                }
            }
        }
        let next: Item = try await api.request(route: .get(server.url + "/next")).value
        #expect(next == Item(name: "again"))
    }
}
#endif
