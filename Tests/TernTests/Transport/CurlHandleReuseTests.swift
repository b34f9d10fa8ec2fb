#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// A libcurl easy handle a finished exchange gave back carries nothing of that exchange into the
/// next one: not its method, body, headers, nor a HEAD's "no body"; and the handles come back
/// to the transport, one per exchange, no more than it keeps. Handles are kept only with
/// libcurl 8.1.0 or later (``CurlLibrary/resetHandlesAreSafe``); these tests keep them with
/// whichever libcurl runs them.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CurlHandleReuseTests {
    /// Answers each request with its request line and every header it came with, one per line,
    /// then the body it came with: what the next exchange would carry over is in its answer.
    static func echo() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let isHead = request.hasPrefix("HEAD ")
                let body = request.replacingOccurrences(of: "\r\n", with: "\n")
                let response = RawServer.Connection.response(body)
                // A HEAD's answer states the length of the body a GET would have, and sends none.
                connection.send(isHead ? String(response.prefix(upTo: response.range(of: "\r\n\r\n")!.upperBound)) : response)
            }
        }
    }

    @Test func aHandleGivenBackCarriesNothingIntoTheNextExchange() async throws {
        let server = try Self.echo()
        defer { server.stop() }
        let transport = try CurlTransport(keepingHandles: true)
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        // Each exchange ends before the next starts, so each takes the handle the last gave back.
        let put: String = try await api.request(route: .put(server.baseURL + "/put"),
                                                parameters: JSONParameters(["name": "first"], headers: ["X-Only-Once": "1", "Accept": "text/x-once"])).value
        #expect(put.hasPrefix("PUT /put HTTP/1.1\n"))
        #expect(put.contains("X-Only-Once: 1") && put.hasSuffix("{\"name\":\"first\"}"))
        #expect(await eventually { transport.handles.keptCount == 1 })

        let head: Data = try await api.request(route: .head(server.baseURL + "/head")).value
        #expect(head.isEmpty)
        #expect(await eventually { transport.handles.keptCount == 1 })

        // Were the PUT's method, body or headers, or the HEAD's lack of a body, still set, this
        // would go out as a PUT or a HEAD, with a body or a header it was not given.
        let get: String = try await api.request(route: .get(server.baseURL + "/get")).value
        let lines = get.split(separator: "\n")
        #expect(lines.first == "GET /get HTTP/1.1")
        #expect(!get.contains("X-Only-Once") && !get.contains("text/x-once") && !get.contains("first"))
        #expect(!get.lowercased().contains("content-length") && !get.lowercased().contains("content-type"))
        #expect(get.hasSuffix("\n\n"), "a body went out with the GET: \(get)")
        #expect(await eventually { transport.handles.keptCount == 1 })
    }

    /// Forty exchanges at once (the server answers none before all forty have asked) hold
    /// forty handles; given back, the transport keeps as many as it keeps idle connections.
    @Test func noMoreHandlesAreKeptThanTheLoopKeepsConnections() async throws {
        let width = CurlLoop.idleConnections + 8
        let asked = Recorder<Int>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                asked.append(connection.index)
                let deadline = Date().addingTimeInterval(20)
                while asked.items.count < width, Date() < deadline { usleep(1_000) }
                connection.send(RawServer.Connection.response(ConnectionReuseTests.name(of: request)))
            }
        }
        defer { server.stop() }
        let transport = try CurlTransport(keepingHandles: true, maximumConnectionsPerHost: width)
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<width {
                group.addTask { try await api.request(route: .get(server.baseURL + "/\(index)")).value }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(answers == Set((0..<width).map(String.init)))
        #expect(server.connections == width)
        #expect(await eventually { transport.handles.keptCount == CurlLoop.idleConnections })
    }

    /// Hears one exchange through the transport alone: pauses at the head if asked, and
    /// counts the body's bytes.
    final class Heard: TransportReceiver, Sendable {
        struct State {
            var head: ResponseHead?
            var received = 0
            var ended: Result<Void, any Error>?
        }
        let state = Locked(State())
        let pausesAtHead: Bool
        init(pausesAtHead: Bool = false) { self.pausesAtHead = pausesAtHead }
        func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
        func didReceive(_ head: ResponseHead) -> TransferDecision {
            state.withLock { $0.head = head }
            return pausesAtHead ? .pause : .proceed
        }
        func didReceive(_ chunk: Data) -> TransferDecision {
            state.withLock { $0.received += chunk.count }
            return .proceed
        }
        func didComplete(with error: (any Error)?) {
            state.withLock { $0.ended = error.map { .failure($0) } ?? .success(()) }
        }
    }

    /// An exchange gives its handle back when it ends, on the loop's thread, though its task is
    /// still held; a late word to that task (resume, cancel) then reaches no handle, not even
    /// the one the next exchange took from it: that exchange stays paused until its own task
    /// resumes it, and its answer arrives whole.
    @Test func anEndedExchangeGivesItsHandleBackAndALateWordToItReachesNoOther() async throws {
        let body = String(repeating: "b", count: 5_000)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                connection.send(RawServer.Connection.response(body))
            }
        }
        defer { server.stop() }
        let transport = try CurlTransport(keepingHandles: true)
        let request = TransportRequest(urlRequest: URLRequest(url: URL(string: server.baseURL + "/items")!))
        let first = Heard()
        let firstTask = transport.send(request, to: first)
        #expect(await eventually { first.state.withLock { $0.ended != nil } })
        #expect(await eventually { transport.handles.keptCount == 1 }, "the handle waited for the task to be let go of")

        let second = Heard(pausesAtHead: true)
        let secondTask = transport.send(request, to: second)
        #expect(await eventually { second.state.withLock { $0.head != nil } })
        #expect(transport.handles.keptCount == 0)
        firstTask.resumeReceiving()
        firstTask.cancel()
        // What reached the second exchange's handle would have let its body in by now.
        try await Task.sleep(for: .milliseconds(300))
        #expect(second.state.withLock { $0.received } == 0)
        #expect(second.state.withLock { $0.ended } == nil)
        secondTask.resumeReceiving()
        #expect(await eventually { second.state.withLock { $0.ended != nil } })
        let ended = second.state.withLock { $0 }
        #expect(ended.received == body.utf8.count)
        #expect((try? ended.ended?.get()) != nil, "\(String(describing: ended.ended))")
        withExtendedLifetime(firstTask) {}
    }

    /// Handles are kept by default only where libcurl resets them safely: 8.1.0 and later.
    @Test func handlesAreKeptFromLibcurl8Point1On() async throws {
        #expect(CurlLibrary.release(of: "libcurl/7.88.1 OpenSSL/3.0.19 zlib/1.2.13") == [7, 88, 1])
        #expect(CurlLibrary.release(of: "libcurl/8.10.1-DEV") == [8, 10, 1])
        #expect(CurlLibrary.release(of: "libcurl/8.1") == nil)
        #expect(CurlLibrary.release(of: "curl/8.1.0") == nil)
        let library = try CurlLibrary.shared.get()
        let release = try #require(CurlLibrary.release(of: library.version))
        #expect(library.resetHandlesAreSafe == (release.lexicographicallyPrecedes([8, 1, 0]) == false))
        let server = try Self.echo()
        defer { server.stop() }
        let transport = try CurlTransport()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let _: String = try await api.request(route: .get(server.baseURL + "/one")).value
        let _: String = try await api.request(route: .get(server.baseURL + "/two")).value
        // Given back once each transfer has left the multi handle, a moment after its answer.
        try await Task.sleep(for: .milliseconds(100))
        #expect(await eventually { transport.handles.keptCount == (library.resetHandlesAreSafe ? 1 : 0) })
    }
}
#endif
