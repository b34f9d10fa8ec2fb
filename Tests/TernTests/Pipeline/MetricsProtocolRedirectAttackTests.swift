#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Per-request metrics meeting redirects that change host and protocol: an HTTP/2 server over
/// TLS, its address pinned to its key, redirects to a plain HTTP/1.1 server (by name, not
/// pinned), which redirects back. TransferMetrics: "What one
/// exchange did on the wire, as its transport measured it … A step that did not happen, such as
/// TLS over plain HTTP or a lookup on a reused connection, is `nil` or 0"; `httpVersion`, "The
/// protocol, such as "HTTP/1.1" or "HTTP/2"". Each leg must name its own URL, status and
/// protocol, and only the TLS legs a handshake.
///
/// Over libcurl whatever `TERN_TEST_TRANSPORT` says (HTTP/2 over the test authority).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MetricsProtocolRedirectAttackTests {
    @Test func eachLegOfAChainAcrossProtocolsNamesItsOwn() async throws {
        let W = HTTP2WireLieAttackTests.self
        let plainBase = Recorder<String>()
        let server = try ScriptedHTTP2Server { request, connection in
            if request.stream == 1 && request.connection == 1 {
                connection.send(.headers, W.endHeaders | W.endStream, request.stream,
                                W.block(status: "302", [(46, (plainBase.items.last ?? "") + "/b"), (W.contentLength, "0")]))
            } else {
                connection.send(.headers, W.endHeaders, request.stream, W.block(status: "200", [(W.contentType, "text/plain"), (W.contentLength, "4")]))
                connection.send(.data, W.endStream, request.stream, Data("done".utf8))
            }
        }
        let plain = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = connection.send("HTTP/1.1 302 Found\r\nLocation: \(server.url)/c\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { plain.stop() }
        // The plain hop by name: a pinned address is never sent plain HTTP.
        let plainURL = plain.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        plainBase.append(plainURL)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, redirectPolicy: RedirectPolicy(allowsInsecureRedirects: true),
                                                              certificatePins: try CertificatePins(["127.0.0.1": [try server.certificates.pin(ofKey: "server.key")]])),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let response: Response = try await api.request(route: .get(server.url + "/a")).value
        #expect(String(decoding: response.body, as: UTF8.self) == "done")
        let metrics = response.metrics
        #expect(metrics.map { $0.url?.absoluteString } == [server.url + "/a", plainURL + "/b", server.url + "/c"], "\(metrics)")
        #expect(metrics.map(\.statusCode) == [302, 302, 200], "\(metrics)")
        #expect(metrics.map(\.httpVersion) == ["HTTP/2", "HTTP/1.1", "HTTP/2"], "\(metrics)")
        #expect(metrics.map { ($0.tlsHandshake ?? 0) == 0 } == [false, true, true], "\(metrics)")
        #expect(metrics.map(\.reusedConnection) == [false, false, true], "\(metrics)")
    }
}
#endif
