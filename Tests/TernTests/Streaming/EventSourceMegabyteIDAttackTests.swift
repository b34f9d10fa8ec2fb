import Foundation
import Testing
import Tern
import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request head past the 1 MiB libcurl builds one in (its DYN_HTTP_REQUEST; libcurl 7.88
/// refuses a larger one before sending it, as CURLE_OUT_OF_MEMORY, code 27, over both
/// transports), reached through a server's event ID and through a caller's field.
///
/// Held to "every promise settles exactly once with a typed APIError that says what went
/// wrong", and, for the event source, to the parser's own rule (ServerSentEventParser: an ID
/// "that cannot go in a header … is ignored too: sent back as `Last-Event-ID`, it failed the
/// next connection, and ended the source for good") and to EventSourceSeamAttackTests'
/// `aHugeIDIsSentBackWholeOrEndsTyped`, which takes neither an end nor a hang; and to
/// `EventSource.isWorthReconnecting`'s rule: no reconnection "after a transport's failure
/// that is not the network's …: those would fail again, every time".
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourceMegabyteIDAttackTests {
    static let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// An `id` just under the source's 1 MiB line limit (so the parser takes it), `retry: 10`,
    /// then the body's end. Every reconnection carries the ID as `Last-Event-ID`, past libcurl's
    /// 1 MiB, and fails before a byte of it is sent; the failure (a "response head" that cannot
    /// be trusted over libcurl, `URLError.unknown` "Out of memory" over URLSession) counts as
    /// the network's, so the source waits and reconnects, again and again, for good: the server
    /// sees connections and never a second request, the caller no event and no error. Observed
    /// on both transports: after 25 s, 6 to 8 connections over libcurl (2 over URLSession),
    /// 1 request, events ["a"], no end. The
    /// reconnection must reach the server (with the ID or, as the parser does for IDs that
    /// cannot be sent, without it), or the source must end, typed. It now ends: the pipeline
    /// refuses a request whose fields pass `RequestBuilder.mostHeaderBytes` before sending it.
    @Test func anIDJustUnderTheLineLimitDoesNotStopEveryReconnection() async throws {
        let id = String(repeating: "i", count: (1 << 20) - 64)
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            requests.append(request)
            switch requests.items.count {
            case 1: _ = connection.send(Self.head + StreamTests.chunk("retry: 10\nid: \(id)\ndata: a\n\n") + "0\r\n\r\n")
            case 2: _ = connection.send(Self.head + StreamTests.chunk("data: b\n\n") + "0\r\n\r\n")
            default: _ = connection.send("HTTP/1.1 204 No Content\r\n\r\n")
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let events = Recorder<String>()
        let ending = Recorder<String>()
        let reading = Task.onTestThreads {
            do {
                for try await event in api.events(route: .get(server.baseURL + "/changes")) { events.append(event.data) }
                ending.append("ended")
            } catch {
                ending.append("\(error)")
            }
        }
        defer { reading.cancel() }
        let settled = await eventually(timeout: 25) { requests.items.count >= 2 || !ending.items.isEmpty }
        #expect(settled, "after 25 s: \(server.connections) connections, \(requests.items.count) request(s), events \(events.items), no end")
        // The reconnect is refused before it is sent, naming the field: the source ends there.
        #expect(ending.items.first?.hasPrefix("Invalid request: its header fields come to") == true, "\(ending.items)")
        #expect(ending.items.first?.contains("Last-Event-ID alone \(id.utf8.count)") == true, "\(ending.items)")
        #expect(events.items == ["a"])
    }

    /// A caller's field of 1 MiB: the request fails before anything is sent, but the error
    /// blames a response: over libcurl "failed before a response arrived: the response cannot
    /// be trusted: a line of its head passed the 100 KB libcurl reads" (`badServerResponse`,
    /// from `CurlFailure.refusedHead`'s reading of code 27), over URLSession "Out of memory"
    /// (`URLError.unknown`). The error must say it is the request's head, not the server's
    /// answer nor the process's memory.
    @Test func aRequestHeadPastOneMegabyteIsNotBlamedOnAResponse() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 204 No Content\r\n\r\n")
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let parameters = URLParameters([:], headers: ["X-Note": String(repeating: "n", count: 1 << 20)])
        let result = await (api.request(route: .get(server.baseURL + "/x"), parameters: parameters) as Promise<Response>).result
        guard case .failure(APIError.invalidRequest(let refusal)) = result else {
            Issue.record("expected the request refused before it was sent, got \(result)")
            return
        }
        #expect("\(refusal)".contains("(X-Note alone 1048576): more than the 1 MiB in which libcurl writes a request's head"), "\(refusal)")
        #expect(server.connections == 0)
    }
}
