import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern
import TernTesting

/// Streams held open and the cap on connections per host: streams run on connections of their
/// own, so that a request beside any number of open streams gets one; a request whose time ran
/// out while it waited for one says so. On the transport under test (``TestTransport``), whose
/// cap per host is 8 over libcurl and 6 over URLSession on Linux.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamConnectionsTests {
    /// Answers `/events…` with an event stream's head and one event, then holds the connection
    /// open until the client closes it; `/hang…` and `/quiet…` with nothing, held the same
    /// way; anything else with its path. Notes the path of each request it holds.
    final class HoldingServer: Sendable {
        let held = Recorder<String>()
        private let server: RawServer

        init() throws {
            let held = held
            server = try RawServer { connection in
                while let request = connection.readRequest() {
                    let path = ConnectionReuseTests.name(of: request)
                    if path.hasPrefix("events") {
                        connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\ndata: open\n\n")
                    }
                    if ["events", "hang", "quiet"].contains(where: path.hasPrefix) {
                        held.append(path)
                        _ = connection.readAvailable(for: 50)   // until the client closes it, or the server stops
                        return
                    }
                    guard connection.send(RawServer.Connection.response(path)) else { return }
                }
            }
        }

        deinit { server.stop() }

        var baseURL: String { server.baseURL }
        var port: Int { server.port }

        /// Waits until it holds `count` requests whose paths start with `prefix`: every
        /// connection the transport allows to it, when `count` is the cap. (Sent at once, the
        /// requests reach the transport in any order.)
        func waitForHeld(_ count: Int, _ prefix: String) async throws {
            for _ in 0..<2000 where held.items.filter({ $0.hasPrefix(prefix) }).count < count {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            #expect(held.items.filter { $0.hasPrefix(prefix) }.count >= count)
        }
    }

    /// The cap per host of the transport under test, by default.
    static var cap: Int {
        #if os(Linux)
        if TestTransport.isCurl { return CurlTransport.defaultConnectionsPerHost }
        #endif
        return URLSessionConfiguration.default.httpMaximumConnectionsPerHost
    }

    static func api(timeout: TimeInterval = 10) -> AbstractAPI? {
        guard let transport = TestTransport.make() else { return nil }
        return AbstractAPI(configuration: APIConfiguration(timeout: timeout, retryPolicy: .never), transport: transport, responseQueue: .global())
    }

    /// Ten streams to one origin, more than the cap: a GET beside them is answered. (It waited
    /// behind them until its timeout.)
    @Test func aRequestBesideOpenStreamsGetsAConnection() async throws {
        let server = try HoldingServer()
        guard let api = Self.api() else { return }
        let streams = (0..<10).map { api.stream(route: .get(server.baseURL + "/events\($0)")) }
        defer { streams.forEach { $0.cancel() } }
        // As many as the cap are open, their heads sent.
        try await server.waitForHeld(Self.cap, "events")
        let answer: String = try await api.request(route: .get(server.baseURL + "/plain")).value
        #expect(answer == "plain")
        // And again, on a connection now idle among the requests'.
        let again: String = try await api.request(route: .get(server.baseURL + "/again")).value
        #expect(again == "again")
    }

    /// A plugin that does nothing: the stream's head is then judged off the transport's thread.
    struct Watching: Plugin { func observe(_ event: PluginEvent, api: APIContext) {} }

    /// A weak reference to a transport, read once the API is gone.
    final class WeakTransport: @unchecked Sendable {
        weak var transport: (any Transport & AnyObject)?
    }

    /// A stream that has ended lets its API's transport go, and with it the transport's
    /// connections and threads, whether its head was judged where it came or, with a plugin,
    /// elsewhere. (Its buffer kept the transport's task, which holds the request, which holds
    /// the buffer: every stream kept its transport for ever. Then a task handed to a stream
    /// that had already ended, and the collector's for a head judged elsewhere, did the same.)
    @Test(arguments: [false, true]) func aFinishedStreamLetsItsTransportGo(withPlugin: Bool) async throws {
        let server = try HoldingServer()
        let gone = WeakTransport()
        do {
            guard let transport = TestTransport.make() else { return }
            gone.transport = transport as? any Transport & AnyObject
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : []),
                                  transport: transport, responseQueue: .global())
            var body = Data()
            for try await chunk in api.stream(route: .get(server.baseURL + "/whole")) { body += chunk }
            #expect(body == Data("whole".utf8))
        }
        #expect(await eventually { gone.transport == nil }, "the transport outlived its API and its stream")
    }

    /// Answers every request whole before `send` returns its task, as a transport may: the
    /// stream has ended by the time the pipeline hands it the task, which holds the receiver
    /// and the transport, as a real transport's does. With `judged`, it returns only once a
    /// head judged elsewhere (by a plugin's API) has been taken, and the end after it.
    final class AnswersAtOnce: Transport {
        let judged: DispatchSemaphore?

        init(judged: DispatchSemaphore?) {
            self.judged = judged
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            let head = ResponseHead(url: request.urlRequest.url!, statusCode: 200, httpVersion: "HTTP/1.1", headers: [:])!
            if receiver.didReceive(head) != .stop { _ = receiver.didReceive(Data("whole".utf8)) }
            receiver.didComplete(with: nil)
            if let judged {
                _ = judged.wait(timeout: .now() + 10)
                Thread.sleep(forTimeInterval: 0.05)   // the end, taken just after the head
            }
            return Holding(transport: self, receiver: receiver)
        }

        struct Holding: TransportTask {
            let transport: AnswersAtOnce
            let receiver: any TransportReceiver
            func cancel() {}
        }
    }

    /// Signals once the stream's head has been judged.
    struct Judged: Plugin {
        let semaphore: DispatchSemaphore
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .didReceive = event { semaphore.signal() }
        }
    }

    @Test(arguments: [false, true]) func aStreamAnsweredBeforeItsTaskCameLetsItsTransportGo(withPlugin: Bool) async throws {
        let gone = WeakTransport()
        do {
            let judged = withPlugin ? DispatchSemaphore(value: 0) : nil
            let transport = AnswersAtOnce(judged: judged)
            gone.transport = transport
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, plugins: judged.map { [Judged(semaphore: $0)] } ?? []),
                                  transport: transport, responseQueue: .global())
            var body = Data()
            for try await chunk in api.stream(route: .get("https://stream.invalid/whole")) { body += chunk }
            #expect(body == Data("whole".utf8))
        }
        #expect(await eventually(timeout: 5) { gone.transport == nil }, "the transport outlived its API and its stream")
    }

    /// A request whose time runs out while every connection allowed to its host is busy says
    /// it waited for one; one that had its connection does not. Streams past their own cap
    /// wait for one of theirs the same way.
    @Test func aRequestThatTimedOutWaitingForAConnectionSaysSo() async throws {
        let server = try HoldingServer()
        // The held requests must outlast the test: at the default 10 s, a loaded machine that
        // took 8 s to see them all held let them time out while the late one waited, and it
        // took a freed connection and was answered.
        guard let api = Self.api(timeout: 120) else { return }
        let short = RequestOptions(timeout: 2)
        // Its own connection, but no answer.
        let unanswered = await (api.request(route: .get(server.baseURL + "/quiet"), options: short) as Promise<String>).result
        guard case .failure(let alone) = unanswered, (alone as? APIError)?.caseName == "timeout" else {
            Issue.record("expected a timeout, got \(unanswered)")
            return
        }
        #expect(!"\(alone)".contains("waiting for a connection"), "\(alone)")
        // Every connection to the host held by requests no one answers.
        let held = (0..<10).map { api.request(route: .get(server.baseURL + "/hang\($0)")) as Promise<String> }
        defer { held.forEach { $0.cancel() } }
        try await server.waitForHeld(Self.cap, "hang")
        let waiting = await (api.request(route: .get(server.baseURL + "/late"), options: short) as Promise<String>).result
        guard case .failure(let error) = waiting, (error as? APIError)?.caseName == "timeout" else {
            Issue.record("expected a timeout, got \(waiting)")
            return
        }
        #expect("\(error)".contains("timed out after 2.0 s waiting for a connection"), "\(error)")
        // Streams past theirs.
        let streams = (0..<10).map { api.stream(route: .get(server.baseURL + "/events\($0)")) }
        defer { streams.forEach { $0.cancel() } }
        try await server.waitForHeld(Self.cap, "events")
        let stream = api.stream(route: .get(server.baseURL + "/events-late"), options: short)
        let head = await stream.response.result
        guard case .failure(let streamError) = head, (streamError as? APIError)?.caseName == "timeout" else {
            Issue.record("expected a timeout, got \(head)")
            return
        }
        #expect("\(streamError)".contains("waiting for a connection"), "\(streamError)")
    }

    #if os(Linux)
    /// Over HTTPS libcurl holds the line, not Tern: a request past the cap whose time ran out
    /// before libcurl gave it a connection says it waited for one; one alone on its connection
    /// does not. (Over HTTPS it said neither.)
    @Test func aRequestThatTimedOutWaitingForAConnectionOverHTTPSSaysSo() async throws {
        let server = try HoldingServer()
        let certificates = try TestCertificates()
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        let short = RequestOptions(timeout: 2)
        let unanswered = await (api.request(route: .get(relay.baseURL + "/quiet"), options: short) as Promise<String>).result
        guard case .failure(let alone) = unanswered, (alone as? APIError)?.caseName == "timeout" else {
            Issue.record("expected a timeout, got \(unanswered)")
            return
        }
        #expect(!"\(alone)".contains("waiting for a connection"), "\(alone)")
        let cap = CurlTransport.defaultConnectionsPerHost
        let held = (0..<cap).map { api.request(route: .get(relay.baseURL + "/hang\($0)")) as Promise<String> }
        defer { held.forEach { $0.cancel() } }
        try await server.waitForHeld(cap, "hang")
        let waiting = await (api.request(route: .get(relay.baseURL + "/late"), options: short) as Promise<String>).result
        guard case .failure(let error) = waiting, (error as? APIError)?.caseName == "timeout" else {
            Issue.record("expected a timeout, got \(waiting)")
            return
        }
        #expect("\(error)".contains("timed out after 2.0 s waiting for a connection"), "\(error)")
        // One of the held ends: the next gets its connection and is answered, waiting no more.
        held[0].cancel()
        let answered: String = try await api.request(route: .get(relay.baseURL + "/after"), options: RequestOptions(timeout: 20)).value
        #expect(answered == "after")
    }
    #endif
}
