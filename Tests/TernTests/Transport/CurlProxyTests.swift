// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// libcurl takes proxies from the environment, as curl does. Each case sets the variables in a
/// child process of its own (an exit test): set in this process, they would send every other
/// test's requests through the proxy.
@Suite(.onTestThreads) struct CurlProxyTests {
    @Test(.exitTest) func httpProxyCarriesPlainRequests() async throws {
        let seen = Recorder<RecordedRequest>()
        let proxy = try LoopbackServer { request in
            seen.append(request)
            return .text("via proxy")
        }
        defer { proxy.stop() }
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) { [proxyURL = proxy.baseURL as String] in
                setenv("http_proxy", proxyURL, 1)
                let api = AbstractAPI(transport: try CurlTransport(), responseQueue: .global())
                let text: String = try await api.request(route: .get("http://shop.invalid/items?page=2")).value
                exit(text == "via proxy" ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
        // The proxy got the whole URL as the target, and the origin's name as the host.
        #expect(seen.items.map(\.target) == ["http://shop.invalid/items?page=2"])
        #expect(seen.items.first?.headers["Host"] == "shop.invalid")
    }

    @Test(.exitTest) func noProxyGoesDirect() async throws {
        let proxied = Recorder<String>()
        let proxy = try LoopbackServer { request in
            proxied.append(request.target)
            return ServerResponse(status: 502)
        }
        defer { proxy.stop() }
        let server = try LoopbackServer { _ in .text("direct") }
        defer { server.stop() }
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) { [proxyURL = proxy.baseURL as String, serverURL = server.baseURL as String] in
                setenv("http_proxy", proxyURL, 1)
                setenv("no_proxy", "127.0.0.1", 1)
                let api = AbstractAPI(transport: try CurlTransport(), responseQueue: .global())
                let text: String = try await api.request(route: .get(serverURL + "/items")).value
                exit(text == "direct" ? EXIT_SUCCESS : EXIT_FAILURE)
            }
        }
        #expect(proxied.items.isEmpty)
    }

    @Test(.exitTest) func aTunnelsHeadIsNotTheResponses() async throws {
        // Through the tunnel, the server answers with a whole 404; the proxy's "200 Connection
        // established" must not be taken for that answer.
        let certificates = try TestCertificates()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("nope", status: "404 Not Found")) else { return }
            }
        }
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let port = relay.port
        let proxy = try RawServer { client in
            guard let head = client.readHead(), head.hasPrefix("CONNECT 127.0.0.1:\(port) ") else { return }
            guard let upstream = CloseOnExec.connected(toLoopbackPort: port) else { return }
            defer { close(upstream) }
            client.send("HTTP/1.1 200 Connection established\r\n\r\n")
            RawServer.relay(client.socket, upstream)
        }
        defer { proxy.stop() }
        // The child prints what it got and exits 0 either way, so that the parent can say what.
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [proxyURL = proxy.baseURL as String, authority = certificates.authority.path as String, port = port as Int] in
                setenv("https_proxy", proxyURL, 1)
                let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                                      transport: try CurlTransport(trusting: URL(fileURLWithPath: authority)), responseQueue: .global())
                let result = await (api.request(route: .get("https://127.0.0.1:\(port)/answer")) as Promise<Data>).result
                if case .failure(APIError.unacceptableStatus(let failure)) = result, failure.statusCode == 404 {
                    print("404")
                } else {
                    print("\(result)")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.hasPrefix("404"), "\(printed)")
    }

    @Test(.exitTest) func httpsProxyTunnelsWithConnect() async throws {
        let seen = Recorder<RecordedRequest>()
        // A proxy that refuses the tunnel: the request fails, typed, and the proxy saw it asked.
        let proxy = try LoopbackServer { request in
            seen.append(request)
            return ServerResponse(status: 403)
        }
        defer { proxy.stop() }
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) { [proxyURL = proxy.baseURL as String] in
                setenv("https_proxy", proxyURL, 1)
                let api = AbstractAPI(transport: try CurlTransport(), responseQueue: .global())
                let promise: Promise<Data> = api.request(route: .get("https://shop.invalid/items"), options: RequestOptions(retryPolicy: .never))
                guard case .failure(APIError.transportFailed) = await promise.result else { exit(EXIT_FAILURE) }
                exit(EXIT_SUCCESS)
            }
        }
        #expect(seen.items.map(\.method) == ["CONNECT"])
        #expect(seen.items.map(\.target) == ["shop.invalid:443"])
    }
}
#endif
