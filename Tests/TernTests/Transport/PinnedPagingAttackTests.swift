#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern
import TernCore
import TernTesting

/// A pinned API's pages and event source, steered by their server toward a connection the pins
/// do not cover: a next link or a redirect to plain http on the pinned host, a next link to a
/// look-alike name of the same server. No page is read, and no request is sent, over it.
/// Over libcurl, which checks pins (URLSession on Linux cannot).
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct PinnedPagingAttackTests {
    /// A pinned server behind a TLS relay (`answer` gets each request, its number from 1, and
    /// the two ports), and a plain one on the same host that no request of the pinned API may
    /// reach.
    final class Servers: Sendable {
        let certificates: TestCertificates
        let pinned = Recorder<String>()
        let plain = Recorder<String>()
        private let backend: RawServer
        private let plainServer: RawServer
        private let relay: TLSRelay

        init(_ answer: @escaping @Sendable (_ request: String, _ number: Int, _ plainPort: Int, _ relayPort: Int) -> String) throws {
            certificates = try TestCertificates()
            let pinned = pinned, plain = plain
            plainServer = try RawServer { connection in
                while let request = connection.readRequest() {
                    plain.append(request)
                    guard connection.send(PaginationSeamAttackTests.page("[666]")) else { return }
                }
            }
            let ports = Locked((plain: 0, relay: 0))
            backend = try RawServer { connection in
                while let request = connection.readRequest() {
                    pinned.append(request)
                    let (plainPort, relayPort) = ports.withLock { ($0.plain, $0.relay) }
                    guard connection.send(answer(request, pinned.items.count, plainPort, relayPort)) else { return }
                }
            }
            relay = try TLSRelay(certificates: certificates, to: backend.port)
            ports.withLock { $0 = (plainServer.port, relay.port) }
        }

        deinit {
            relay.stop()
            backend.stop()
            plainServer.stop()
        }

        var url: String { relay.baseURL }

        func api(insecureRedirects: Bool = false) throws -> AbstractAPI {
            var configuration = APIConfiguration(timeout: 30, retryPolicy: .never,
                                                 redirectPolicy: RedirectPolicy(allowsInsecureRedirects: insecureRedirects))
            configuration.certificatePins = try CertificatePins(["127.0.0.1": [try certificates.pin(ofKey: "server.key")]])
            return AbstractAPI(configuration: configuration, transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        }

        var pinnedTargets: [String] { pinned.items.map(PaginationSeamAttackTests.target(of:)) }
    }

    /// Next links to the pinned host over plain http, and to `localhost`, a name of the same
    /// server the pins do not list: neither is followed, and the loop throws there.
    @Test(arguments: ["http://127.0.0.1:PLAIN/p2", "https://localhost:RELAY/p2", "http://127.0.0.1:RELAY/p2"])
    func aNextLinkOffThePinsIsNotFollowed(link: String) async throws {
        let servers = try Servers { request, _, plainPort, relayPort in
            let to = link.replacingOccurrences(of: "PLAIN", with: String(plainPort)).replacingOccurrences(of: "RELAY", with: String(relayPort))
            return PaginationSeamAttackTests.page("[1]", headers: "Link: <\(to)>; rel=\"next\"\r\n")
        }
        var pages: [[Int]] = []
        await #expect(throws: APIError.self) {
            for try await page in try servers.api().pages(APIRequest<[Int]>(.get(servers.url + "/p1")), style: .linkHeader) {
                pages.append(page.elements)
            }
        }
        #expect(pages == [[1]])
        #expect(servers.pinnedTargets == ["/p1"])
        #expect(servers.plain.items.isEmpty)
    }

    /// A next link at the pinned origin, redirected to plain http on the pinned host, with and
    /// without `allowsInsecureRedirects`: the page fails typed, and nothing reaches the plain
    /// server.
    @Test(arguments: [false, true])
    func aNextPageRedirectedToPlainHTTPFails(insecureRedirects: Bool) async throws {
        let servers = try Servers { request, _, plainPort, _ in
            switch PaginationSeamAttackTests.target(of: request) {
            case "/p1": PaginationSeamAttackTests.page("[1]", headers: "Link: </p2>; rel=\"next\"\r\n")
            default: "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:\(plainPort)/p3\r\nContent-Length: 0\r\n\r\n"
            }
        }
        var pages: [[Int]] = []
        do {
            for try await page in try servers.api(insecureRedirects: insecureRedirects).pages(APIRequest<[Int]>(.get(servers.url + "/p1")), style: .linkHeader) {
                pages.append(page.elements)
            }
            Issue.record("no error")
        } catch let error as APIError {
            switch error {
            case .redirectFailed, .pinningFailed: break
            default: Issue.record("expected redirectFailed or pinningFailed, got \(error)")
            }
        }
        #expect(pages == [[1]])
        #expect(servers.pinnedTargets == ["/p1", "/p2"])
        #expect(servers.plain.items.isEmpty, "\(servers.plain.items)")
    }

    /// A pinned event source whose reconnection is redirected to plain http on the pinned host,
    /// insecure redirects allowed: it ends typed, nothing reaches the plain server, and it does
    /// not come back.
    @Test func aReconnectionRedirectedToPlainHTTPEndsTheSource() async throws {
        let servers = try Servers { _, number, plainPort, _ in
            if number == 1 {
                return EventSourceSeamAttackTests.head + EventSourceSeamAttackTests.chunk("retry: 10\nid: 1\ndata: a\n\n") + "0\r\n\r\n"
            }
            return "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:\(plainPort)/changes\r\nContent-Length: 0\r\n\r\n"
        }
        var events: [String] = []
        do {
            let source = try servers.api(insecureRedirects: true).events(route: .get(servers.url + "/changes"), reconnection: EventReconnection(delay: 0.5))
            for try await event in source { events.append(event.data) }
            Issue.record("no error")
        } catch let error as APIError {
            switch error {
            case .redirectFailed, .pinningFailed: break
            default: Issue.record("expected redirectFailed or pinningFailed, got \(error)")
            }
        }
        #expect(events == ["a"])
        try await Task.sleep(for: .milliseconds(800))
        #expect(servers.pinned.items.count == 2)
        #expect(servers.plain.items.isEmpty, "\(servers.plain.items)")
    }
}
#endif
