// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// Pins and private authorities against what a user's shell carries: `https_proxy`,
/// `HTTPS_PROXY` and `ALL_PROXY` naming a proxy that tunnels to an impostor, `SSL_CERT_FILE`,
/// `SSL_CERT_DIR` and `CURL_CA_BUNDLE` naming the impostor's authority, a `HOME` and `CURL_HOME`
/// whose `.netrc` and `.curlrc` hold credentials, headers and a proxy, and a proxy whose answer
/// to `CONNECT` carries cookies and caching fields. The variables are set in a child process
/// (an exit test) alone; the servers run in this one and record what reaches them. Whatever the
/// environment says, a pinned API talks only to its pinned key, a private authority is the only
/// one trusted, no credential reaches a proxy, and nothing a proxy says is taken for the origin's.
@Suite(.onTestThreads, .exitTest) struct EnvironmentTrustAttackTests {
    /// A proxy that answers every `CONNECT` with `reply` and then relays to 127.0.0.1:`port`,
    /// wherever the client asked to go (an attacker's proxy routes where it likes), keeping each
    /// head it was sent.
    static func proxy(to port: Int, heads: Recorder<String>,
                      reply: String = "HTTP/1.1 200 Connection established\r\n\r\n") throws -> RawServer {
        try RawServer { client in
            guard let head = client.readHead() else { return }
            heads.append(head)
            guard reply.contains(" 200 ") else {
                _ = client.send(reply)
                return
            }
            guard let upstream = CloseOnExec.connected(toLoopbackPort: port) else { return }
            defer { close(upstream) }
            guard client.send(reply) else { return }
            RawServer.relay(client.socket, upstream)
        }
    }

    /// What a request came to, in a word the parent can compare: the body, or the error's case
    /// (a transport failure with its `URLError` code).
    static func outcome(_ result: Result<Response, any Error>) -> String {
        switch result {
        case .success(let response): String(decoding: response.body, as: UTF8.self)
        case .failure(APIError.pinningFailed): "pinningFailed"
        case .failure(APIError.transportFailed(let failure)): "transportFailed(\((failure.underlying as? URLError)?.code.rawValue ?? 0))"
        case .failure(APIError.unacceptableStatus(let failure)): "status(\(failure.statusCode))"
        case .failure(let error): "\(error)"
        }
    }

    /// Whether `outcome` is a server certificate refused as untrusted, on either transport.
    static func refusedCertificate(_ outcome: String?) -> Bool {
        outcome == "transportFailed(\(URLError.Code.serverCertificateUntrusted.rawValue))"
    }

    static let proxyVariables = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]

    static func printed(_ child: ExitTest.Result?) -> [String] {
        String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: "|").map(String.init)
    }

    /// The origin's answer names the credentials it was sent.
    static func origin(_ name: String) throws -> HTTPCacheTests.Origin {
        try HTTPCacheTests.Origin { request, _ in
            let lines = request.components(separatedBy: "\r\n")
            let authorization = lines.contains { $0.lowercased().hasPrefix("authorization: bearer secret-token") }
            let cookie = lines.first { $0.lowercased().hasPrefix("cookie:") }.map { String($0.dropFirst(8)) } ?? "-"
            return HTTPCacheTests.answer("\(name) auth=\(authorization) cookie=\(cookie)",
                                         "Cache-Control: no-store\r\nSet-Cookie: session=s1; Path=/\r\n")
        }
    }

    /// A pinned API whose transport trusts both the real server's authority and the impostor's
    /// (so that only the pin tells them apart): through `https_proxy`, then `HTTPS_PROXY`, then
    /// `ALL_PROXY` naming a proxy that tunnels to the impostor, each request fails with
    /// `pinningFailed` and the impostor hears nothing; through a proxy that tunnels honestly, and
    /// with no proxy, it reaches its server with its token and cookie. No proxy ever sees the
    /// token or the cookie: a `CONNECT` carries neither.
    @Test(.enabled(if: TestTransport.isCurl, "URLSession on Linux cannot check pins"))
    func aPinnedAPIReachesOnlyItsKeyWhateverProxyTheEnvironmentNames() async throws {
        let (real, fake) = (try TestCertificates(), try TestCertificates())
        let bundle = real.directory.appendingPathComponent("both.pem")
        try (Data(contentsOf: real.authority) + Data(contentsOf: fake.authority)).write(to: bundle)
        let (origin, impostor) = (try EnvironmentTrustAttackTests.origin("real"), try EnvironmentTrustAttackTests.origin("impostor"))
        let realRelay = try TLSRelay(certificates: real, to: origin.server.port)
        defer { realRelay.stop() }
        let fakeRelay = try TLSRelay(certificates: fake, to: impostor.server.port)
        defer { fakeRelay.stop() }
        let (honestHeads, evilHeads) = (Recorder<String>(), Recorder<String>())
        let honest = try EnvironmentTrustAttackTests.proxy(to: realRelay.port, heads: honestHeads)
        defer { honest.stop() }
        let evil = try EnvironmentTrustAttackTests.proxy(to: fakeRelay.port, heads: evilHeads)
        defer { evil.stop() }
        let pin = try real.pin(ofKey: "server.key")

        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [bundle = bundle.path as String, pin = pin as String, url = realRelay.baseURL as String,
                 honest = honest.baseURL as String, evil = evil.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never,
                                                                      certificatePins: try CertificatePins(["127.0.0.1": [pin]])),
                                      transport: try CurlTransport(trusting: URL(fileURLWithPath: bundle)), responseQueue: .global())
                func get(_ path: String) async -> String {
                    EnvironmentTrustAttackTests.outcome(await (api.request(route: .get(url + path), options: RequestOptions(headers: ["Authorization": "Bearer secret-token"]))
                        as Promise<Response>).result)
                }
                var outcomes: [String] = []
                setenv("https_proxy", honest, 1)
                outcomes.append(await get("/login"))
                for (name, value) in [("https_proxy", evil), ("HTTPS_PROXY", evil), ("ALL_PROXY", evil)] {
                    for other in EnvironmentTrustAttackTests.proxyVariables { unsetenv(other) }
                    setenv(name, value, 1)
                    outcomes.append(await get("/data"))
                }
                for other in EnvironmentTrustAttackTests.proxyVariables { unsetenv(other) }
                outcomes.append(await get("/data"))
                print(outcomes.joined(separator: "|"))
            }
        }
        #expect(EnvironmentTrustAttackTests.printed(child) == [
            "real auth=true cookie=-",
            "pinningFailed", "pinningFailed", "pinningFailed",
            "real auth=true cookie=session=s1",
        ])
        #expect(impostor.count == 0, "\(impostor.requests.items)")
        #expect(origin.count == 2)
        #expect(honestHeads.items.count == 1 && evilHeads.items.count == 3, "\(honestHeads.items) \(evilHeads.items)")
        for head in honestHeads.items + evilHeads.items {
            #expect(head.hasPrefix("CONNECT 127.0.0.1:\(realRelay.port) "), "\(head)")
            #expect(!head.lowercased().contains("secret-token") && !head.lowercased().contains("cookie") && !head.contains("s1"), "\(head)")
        }
    }

    /// Plain HTTP: `HTTP_PROXY` in capitals, which a CGI program's environment takes from a
    /// request's `Proxy` field (httpoxy), is ignored, and the request goes straight to its server;
    /// `http_proxy` is curl's, and the proxy it names is the next hop: it gets the request whole,
    /// its `Authorization` and cookies with it, as any proxy of plain HTTP does (Security.md says
    /// so). On either transport.
    @Test func plainHTTPGoesToTheLowercaseProxyAloneAndWhole() async throws {
        let origin = try EnvironmentTrustAttackTests.origin("real")
        let proxied = Recorder<String>()
        let proxy = try RawServer { connection in
            while let request = connection.readRequest() {
                proxied.append(request)
                guard connection.send(RawServer.Connection.response("proxy")) else { return }
            }
        }
        defer { proxy.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [url = origin.url as String, proxy = proxy.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                func get() async -> String {
                    EnvironmentTrustAttackTests.outcome(await (api.request(route: .get(url + "/data"), options: RequestOptions(headers: [
                        "Authorization": "Bearer secret-token", "Cookie": "session=s0",
                    ])) as Promise<Response>).result)
                }
                setenv("HTTP_PROXY", proxy, 1)
                var outcomes = [await get()]
                unsetenv("HTTP_PROXY")
                setenv("http_proxy", proxy, 1)
                outcomes.append(await get())
                print(outcomes.joined(separator: "|"))
            }
        }
        #expect(EnvironmentTrustAttackTests.printed(child) == ["real auth=true cookie=session=s0", "proxy"])
        #expect(origin.count == 1)
        #expect(proxied.items.count == 1)
        #expect(proxied.items.first.map { $0.hasPrefix("GET \(origin.url)/data ") && $0.contains("Bearer secret-token") } == true,
                "\(proxied.items)")
    }

    /// A transport that trusts a private authority alone, in a shell whose `SSL_CERT_FILE`,
    /// `SSL_CERT_DIR` and `CURL_CA_BUNDLE` name the impostor's authority and whose `https_proxy`
    /// tunnels to the impostor: the impostor's certificate is refused (untrusted) and it hears
    /// nothing; with the proxy gone, the real server answers.
    @Test(.enabled(if: TestTransport.isCurl, "a private authority is CurlTransport's"))
    func aPrivateAuthorityIsTheOnlyOneTrustedWhateverTheCAVariablesSay() async throws {
        let (real, fake) = (try TestCertificates(), try TestCertificates())
        let (origin, impostor) = (try EnvironmentTrustAttackTests.origin("real"), try EnvironmentTrustAttackTests.origin("impostor"))
        let realRelay = try TLSRelay(certificates: real, to: origin.server.port)
        defer { realRelay.stop() }
        let fakeRelay = try TLSRelay(certificates: fake, to: impostor.server.port)
        defer { fakeRelay.stop() }
        let evilHeads = Recorder<String>()
        let evil = try EnvironmentTrustAttackTests.proxy(to: fakeRelay.port, heads: evilHeads)
        defer { evil.stop() }
        // OpenSSL's directory form: the authority under its subject hash.
        try FileManager.default.copyItem(at: fake.authority, to: fake.directory.appendingPathComponent("ca-dir-copy.pem"))
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [authority = real.authority.path as String, fakeAuthority = fake.authority.path as String,
                 fakeDirectory = fake.directory.path as String, url = realRelay.baseURL as String, evil = evil.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                setenv("SSL_CERT_FILE", fakeAuthority, 1)
                setenv("SSL_CERT_DIR", fakeDirectory, 1)
                setenv("CURL_CA_BUNDLE", fakeAuthority, 1)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                                      transport: try CurlTransport(trusting: URL(fileURLWithPath: authority)), responseQueue: .global())
                func get() async -> String {
                    EnvironmentTrustAttackTests.outcome(await (api.request(route: .get(url + "/data"), options: RequestOptions(headers: ["Authorization": "Bearer secret-token"]))
                        as Promise<Response>).result)
                }
                setenv("https_proxy", evil, 1)
                var outcomes = [await get()]
                unsetenv("https_proxy")
                outcomes.append(await get())
                print(outcomes.joined(separator: "|"))
            }
        }
        #expect(EnvironmentTrustAttackTests.printed(child) == ["transportFailed(\(URLError.Code.serverCertificateUntrusted.rawValue))", "real auth=true cookie=-"])
        #expect(impostor.count == 0)
        #expect(evilHeads.items.count == 1)
    }

    /// A transport that trusts the system's authorities, in a shell whose `SSL_CERT_FILE`,
    /// `SSL_CERT_DIR` and `CURL_CA_BUNDLE` name an authority of the test's: the three are the curl
    /// tool's and OpenSSL's, not libcurl's, whose own bundle stays the one trusted, so the
    /// server that authority signed is refused, on either transport.
    @Test func theSystemsAuthoritiesAreNotWhatTheCAVariablesName() async throws {
        let fake = try TestCertificates()
        let impostor = try EnvironmentTrustAttackTests.origin("impostor")
        let fakeRelay = try TLSRelay(certificates: fake, to: impostor.server.port)
        defer { fakeRelay.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [fakeAuthority = fake.authority.path as String, fakeDirectory = fake.directory.path as String,
                 url = fakeRelay.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                setenv("SSL_CERT_FILE", fakeAuthority, 1)
                setenv("SSL_CERT_DIR", fakeDirectory, 1)
                setenv("CURL_CA_BUNDLE", fakeAuthority, 1)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                let result = await (api.request(route: .get(url + "/data"), options: RequestOptions(headers: ["Authorization": "Bearer secret-token"]))
                    as Promise<Response>).result
                print(EnvironmentTrustAttackTests.outcome(result))
            }
        }
        let printed = EnvironmentTrustAttackTests.printed(child)
        #expect(printed.count == 1 && EnvironmentTrustAttackTests.refusedCertificate(printed.first), "\(printed)")
        #expect(impostor.count == 0)
    }

    /// A `HOME` and a `CURL_HOME` whose `.netrc` holds a password for 127.0.0.1 and whose
    /// `.curlrc` adds a user, a header, a proxy and `insecure`: libcurl reads neither file unless
    /// told (the curl tool does), so a server that asks for Basic credentials gets none, once,
    /// the header is not sent, the proxy hears nothing, and an untrusted server stays untrusted,
    /// on either transport.
    @Test func aUsersNetrcAndCurlrcAddNothingToARequest() async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                guard connection.send(RawServer.Connection.response("who?", status: "401 Unauthorized",
                                                                     headers: "WWW-Authenticate: Basic realm=\"shop\"\r\n")) else { return }
            }
        }
        defer { server.stop() }
        let fake = try TestCertificates()
        let impostor = try EnvironmentTrustAttackTests.origin("impostor")
        let fakeRelay = try TLSRelay(certificates: fake, to: impostor.server.port)
        defer { fakeRelay.stop() }
        let proxyHeads = Recorder<String>()
        let proxy = try EnvironmentTrustAttackTests.proxy(to: fakeRelay.port, heads: proxyHeads)
        defer { proxy.stop() }
        let home = fake.directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try Data("machine 127.0.0.1 login alice password hunter2\ndefault login bob password hunter3\n".utf8)
            .write(to: home.appendingPathComponent(".netrc"))
        try Data("user = \"carol:hunter4\"\nheader = \"X-Curlrc: planted\"\nproxy = \"\(proxy.baseURL)\"\ninsecure\nnetrc\n".utf8)
            .write(to: home.appendingPathComponent(".curlrc"))
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [home = home.path as String, url = server.baseURL as String, secure = fakeRelay.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                setenv("HOME", home, 1)
                setenv("CURL_HOME", home, 1)
                setenv("NETRC", home + "/.netrc", 1)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                let plain = await (api.request(route: .get(url + "/account")) as Promise<Response>).result
                let overTLS = await (api.request(route: .get(secure + "/account")) as Promise<Response>).result
                print([EnvironmentTrustAttackTests.outcome(plain), EnvironmentTrustAttackTests.outcome(overTLS)].joined(separator: "|"))
            }
        }
        let printed = EnvironmentTrustAttackTests.printed(child)
        #expect(printed.count == 2 && printed.first == "status(401)" && EnvironmentTrustAttackTests.refusedCertificate(printed.last), "\(printed)")
        #expect(requests.items.count == 1, "\(requests.items)")
        for request in requests.items {
            #expect(!request.lowercased().contains("authorization") && !request.contains("X-Curlrc"), "\(request)")
        }
        #expect(proxyHeads.items.isEmpty && impostor.count == 0)
    }

    /// A proxy from the environment whose answer to `CONNECT` carries `Set-Cookie`, caching
    /// fields and a validator, then tunnels honestly; and one that refuses the tunnel with a
    /// `407` carrying a cookie and a body. The proxy's head is not the origin's: no cookie it
    /// set is kept or sent to the origin, the origin's `no-store` answers are asked for each
    /// time, and the `407` fails as the transport's, not as the origin's status.
    @Test(.enabled(if: TestTransport.isCurl, "a private authority is CurlTransport's"))
    func aProxysAnswerToConnectIsNotTheOrigins() async throws {
        let real = try TestCertificates()
        let origin = try EnvironmentTrustAttackTests.origin("real")
        let relay = try TLSRelay(certificates: real, to: origin.server.port)
        defer { relay.stop() }
        let heads = Recorder<String>()
        let chatty = try EnvironmentTrustAttackTests.proxy(to: relay.port, heads: heads, reply: "HTTP/1.1 200 Connection established\r\n"
            + "Set-Cookie: planted=proxy; Path=/\r\nCache-Control: max-age=600\r\nETag: \"proxy\"\r\nContent-Type: text/html\r\n\r\n")
        defer { chatty.stop() }
        let refusing = try EnvironmentTrustAttackTests.proxy(to: relay.port, heads: heads, reply: "HTTP/1.1 407 Proxy Authentication Required\r\n"
            + "Proxy-Authenticate: Basic realm=\"proxy\"\r\nSet-Cookie: planted407=proxy; Path=/\r\nContent-Length: 10\r\n\r\nproxy says")
        defer { refusing.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [authority = real.authority.path as String, url = relay.baseURL as String,
                 chatty = chatty.baseURL as String, refusing = refusing.baseURL as String] in
                for name in EnvironmentTrustAttackTests.proxyVariables { unsetenv(name) }
                let jar = CookieJar()
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cookies: .shared(jar), cache: HTTPCache()),
                                      transport: try CurlTransport(trusting: URL(fileURLWithPath: authority)), responseQueue: .global())
                func get() async -> String { EnvironmentTrustAttackTests.outcome(await (api.request(route: .get(url + "/data")) as Promise<Response>).result) }
                setenv("https_proxy", chatty, 1)
                var outcomes = [await get(), await get()]
                setenv("https_proxy", refusing, 1)
                outcomes.append(await get())
                unsetenv("https_proxy")
                outcomes.append(await get())
                outcomes.append(jar.all.map(\.name).sorted().joined(separator: ","))
                print(outcomes.joined(separator: "|"))
            }
        }
        let printed = EnvironmentTrustAttackTests.printed(child)
        #expect(printed.count == 5, "\(printed)")
        #expect(printed.prefix(2) == ["real auth=false cookie=-", "real auth=false cookie=session=s1"], "\(printed)")
        #expect(printed.dropFirst(2).first?.hasPrefix("transportFailed") == true, "\(printed)")
        #expect(printed.dropFirst(3) == ["real auth=false cookie=session=s1", "session"], "\(printed)")
        #expect(origin.count == 3)
        #expect(heads.items.count == 3 || heads.items.count == 2, "\(heads.items)")
    }
}
#endif
