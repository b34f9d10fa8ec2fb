#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// An event source meeting pins through a redirect: the source's URL is on a host that is not
/// pinned (`localhost`), which redirects, on the first connection or on a reconnection, to a
/// pinned address (`127.0.0.1`) whose server does not show the pinned key. Security.md: "Each
/// stop of a redirect chain is checked for its own host", and `pinningFailed` "is not
/// retried"; EventSource: it fails "with the request's error" on errors that would fail again.
/// The source must end with `pinningFailed`, promptly, and never reach the pinned path.
///
/// Over libcurl whatever `TERN_TEST_TRANSPORT` says: URLSession on Linux cannot check pins.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourcePinnedRedirectAttackTests {
    @Test(arguments: [false, true])
    func aSourceRedirectedToAPinnedHostOffItsKeyEndsPinned(onReconnection: Bool) async throws {
        let certificates = try TestCertificates(names: "IP:127.0.0.1,DNS:localhost")
        let target = Recorder<String>()
        let requests = Recorder<String>()
        let backend = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            requests.append(request)
            let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            if path == "/start" && (!onReconnection || requests.items.count > 1) {
                _ = connection.send("HTTP/1.1 302 Found\r\nLocation: \(target.items.last ?? "")/pinned\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            let body = "retry: 10\nid: \(requests.items.count)\ndata: at \(path)\n\n"
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        }
        defer { backend.stop() }
        let relay = try TLSRelay(certificates: certificates, to: backend.port)
        defer { relay.stop() }
        target.append("https://127.0.0.1:\(relay.port)")
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never,
                                                              certificatePins: try CertificatePins(["127.0.0.1": [CertificatePinningTests.wrongPin]])),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        var events: [String] = []
        do {
            for try await event in api.events(route: .get("https://localhost:\(relay.port)/start"), reconnection: EventReconnection(delay: 0.5)) {
                events.append(event.data)
                if events.count > 20 { break }
            }
            Issue.record("the source ended without an error: \(events)")
        } catch APIError.pinningFailed {
        } catch {
            Issue.record("expected pinningFailed, got \(error)")
        }
        #expect(events == (onReconnection ? ["at /start"] : []))
        #expect(!requests.items.contains { $0.hasPrefix("GET /pinned ") }, "\(requests.items)")
        try await Task.sleep(for: .milliseconds(1200))
        #expect(requests.items.count == (onReconnection ? 2 : 1), "\(requests.items.count) requests")
    }
}
#endif
