#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// Streams over HTTP/2 (libcurl) whose connection goes away under them, and streams from a
/// server the API's pins refuse. A GOAWAY that keeps the open streams lets them go on; a reset
/// connection then ends each stream once, typed (one open, one paused in a slow reader, which
/// first hands over the events it holds, in order), and an event source on it reconnects with
/// `Last-Event-ID`. A stream from a server whose key is not pinned fails `pinningFailed` before
/// any event; an event source does not come back for more.
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: TestTransport.isCurl, "HTTP/2 is libcurl's alone on Linux"))
struct HTTP2StreamDropAttackTests {
    /// What plugins hear of each attempt: its path, and `Last-Event-ID` as it went, or its
    /// stream's end with its error.
    final class Log: Plugin, @unchecked Sendable {
        enum Entry: Equatable {
            case sent(path: String, lastEventID: String?)
            case ended(path: String, error: String?)
        }

        let entries = Recorder<Entry>()

        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend(let request):
                entries.append(.sent(path: request.url?.path ?? "", lastEventID: request.value(forHTTPHeaderField: "Last-Event-ID")))
            case .didEndStream(let response, let error):
                entries.append(.ended(path: response.request.url?.path ?? "", error: error.map { "\(Self.kind($0))" }))
            default:
                break
            }
        }

        static func kind(_ error: APIError) -> String {
            switch error {
            case .transportFailed: "transportFailed"
            case .cancelled: "cancelled"
            case .timeout: "timeout"
            case .pinningFailed: "pinningFailed"
            default: "\(error)"
            }
        }

        func ends(_ path: String) -> [String?] {
            entries.items.compactMap { if case .ended(path, let error) = $0 { error } else { nil } }
        }
    }

    /// How a stream's reading ended: `end`, or the error's kind, or `untyped`.
    static func ending(_ body: () async throws -> Void) async -> String {
        do {
            try await body()
            return "end"
        } catch let error as APIError {
            return Log.kind(error)
        } catch {
            return "untyped \(error)"
        }
    }

    @Test func aDroppedConnectionEndsEachStreamOnceTypedAndAnEventSourceResumes() async throws {
        // 1: the event source's first connection; 2: a flood (4 MiB, then silence), read slowly; 3: a stream that
        // stays open; 4: the event source's second connection.
        let server = try HTTP2StreamServer(plans: [
            1: .events("id: 7\ndata: a\n\n", ends: false),
            2: .floodOf(4 << 20),
            3: .events("data: open\n\n", ends: false),
            4: .events("id: 8\ndata: b\n\n", ends: false),
        ])
        defer { server.stop() }
        let log = Log()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: [log]),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())

        let feed = Recorder<String>()
        let source = Task.onTestThreads {
            await Self.ending {
                for try await event in api.events(route: .get(server.url + "/feed"), reconnection: EventReconnection(delay: 0.5, maximumDelay: 1)) {
                    feed.append("\(event.lastEventID) \(event.data)")
                    if event.data == "b" { return }
                }
            }
        }
        #expect(await eventually { feed.items == ["7 a"] }, "\(feed.items)")

        let flood = api.stream(route: .get(server.url + "/flood"))
        var floodEvents = flood.events.makeAsyncIterator()
        var ids: [Int] = []
        ids.append(Int(try await floodEvents.next()?.lastEventID ?? "") ?? -1)
        let open = api.stream(route: .get(server.url + "/open"))
        var openEvents = open.events.makeAsyncIterator()
        #expect(try await openEvents.next()?.data == "open")
        // The flood is paused once the server stops (it has sent its 4 MiB, or the windows are full).
        var last = -1
        for _ in 0..<60 where server.flooded != last {
            last = server.flooded
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(server.flooded == last, "the server was never held back")
        let requests = server.requests
        try #require(requests.count == 3, "\(requests)")
        // The flood and the open stream share a connection (the event source's first, which
        // they found open).
        #expect(requests[1].connection == requests[2].connection)

        // A GOAWAY that keeps both streams: they go on.
        server.goAway(requests[1].connection, lastStream: requests[2].stream)
        ids.append(Int(try await floodEvents.next()?.lastEventID ?? "") ?? -1)
        // Then both connections are reset.
        for connection in Set(requests.map(\.connection)) { server.hangUp(connection) }

        let openEnding = await Self.ending { while try await openEvents.next() != nil {} }
        #expect(openEnding == "transportFailed")
        let floodEnding = await Self.ending {
            while let event = try await floodEvents.next() { ids.append(Int(event.lastEventID) ?? -1) }
        }
        #expect(floodEnding == "transportFailed")
        // What the flood had held came first, in order, none twice or skipped. (Not always all
        // 4,096 the server sent: a reset drops what the client's socket had not yet read.)
        #expect(ids.count > 2 && ids == Array(1...ids.count), "\(ids.count) events, first \(ids.prefix(3)), last \(ids.suffix(3))")
        // Once ended, a stream stays ended.
        let again = await Self.ending { _ = try await openEvents.next() }
        #expect(!again.hasPrefix("untyped"), "\(again)")

        // The event source came back with the last ID, on a connection of its own.
        let sourceEnding = await outcome(of: Task.onTestThreads { await source.value })
        #expect(try sourceEnding.get() == "end")
        #expect(feed.items == ["7 a", "8 b"], "\(feed.items)")
        let sends = log.entries.items.compactMap { entry -> String? in
            if case .sent("/feed", let id) = entry { id ?? "none" } else { nil }
        }
        #expect(sends == ["none", "7"], "\(sends)")
        let reconnection = server.requests.last
        #expect(server.requests.count == 4 && reconnection.map { !Set(requests.map(\.connection)).contains($0.connection) } == true,
                "each connection of an event source is new: \(server.requests)")

        // Plugins heard each stream end once, with the error the reader had.
        #expect(await eventually { log.ends("/flood").count == 1 && log.ends("/open").count == 1 && log.ends("/feed").count == 2 })
        #expect(log.ends("/flood") == ["transportFailed"])
        #expect(log.ends("/open") == ["transportFailed"])
        #expect(log.ends("/feed").first == "transportFailed")
        // And the API goes on over a new connection.
        var after: [String] = []
        for try await line in api.stream(route: .get(server.url + "/after")).lines { after.append(line) }
        #expect(after == [#"{"name":"sibling"}"#])
        // The client closed its ends of the connections that were reset: only the new one is open.
        #expect(await eventually(timeout: 10) { TCPSockets.clientEnds(to: server.port).count == 1 }, "\(TCPSockets.describe(port: server.port))")
    }

    @Test(arguments: [false, true]) func aStreamFromAServerOffThePinsFailsBeforeAnyEvent(eventSource: Bool) async throws {
        let server = try HTTP2StreamServer(plans: [1: .events("id: 1\ndata: secret\n\n", ends: true), 2: .events("id: 2\ndata: secret\n\n", ends: true)])
        defer { server.stop() }
        let other = try TestCertificates()
        let log = Log()
        func api(pinning pin: String) throws -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: [log],
                                                        certificatePins: try CertificatePins(["127.0.0.1": [pin]])),
                        transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        }
        // Pinned to the server's key, the stream comes.
        var pinned: [String] = []
        for try await event in try api(pinning: server.certificates.pin(ofKey: "server.key")).stream(route: .get(server.url + "/pinned")).events {
            pinned.append(event.data)
        }
        #expect(pinned == ["secret"])

        // Pinned to another key: no event, `pinningFailed`, and an event source does not retry.
        let refused = try api(pinning: other.pin(ofKey: "server.key"))
        let seen = Recorder<String>()
        let ending = await Self.ending {
            if eventSource {
                for try await event in refused.events(route: .get(server.url + "/refused"), reconnection: EventReconnection(delay: 0.5, maximumDelay: 1)) {
                    seen.append(event.data)
                }
            } else {
                for try await event in refused.stream(route: .get(server.url + "/refused")).events { seen.append(event.data) }
            }
        }
        #expect(ending == "pinningFailed")
        #expect(seen.items.isEmpty, "\(seen.items)")
        let sends = log.entries.items.filter { if case .sent("/refused", _) = $0 { true } else { false } }
        #expect(sends.count == 1, "\(log.entries.items)")
        // The refused stream never opened: no end to hear, and no request reached the server.
        #expect(log.ends("/refused").isEmpty, "\(log.entries.items)")
        #expect(server.requests.count == 1, "\(server.requests)")
    }
}
#endif
