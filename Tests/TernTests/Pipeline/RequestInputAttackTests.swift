import Foundation
import Testing
import Tern
import TernTesting

/// What an app puts into a request from values it does not control (an ID in a route's path, a
/// display name in a header, a body on any method, a server's `Location`), read as bytes by a
/// raw server, over the transport under test: such a value never changes which request goes out
/// (another host, another request line, an extra field or request), never drops a field the
/// app set, and never takes the API's credentials to a host the app did not name.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct RequestInputAttackTests {
    /// A raw server that keeps every request it reads, as text, and answers each as `answer` says.
    typealias Wire = KeepingServer

    static func api(_ configuration: APIConfiguration) -> AbstractAPI {
        AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
    }

    /// The lines of a request's head, without the blank line that ends it.
    static func lines(of request: String) -> [Substring] {
        let head = request.range(of: "\r\n\r\n").map { request[..<$0.lowerBound] } ?? Substring(request)
        return head.split(separator: "\r\n", omittingEmptySubsequences: false)
    }

    /// The values of the fields named `name`, in any case, trimmed.
    static func fields(_ name: String, in request: String) -> [String] {
        lines(of: request).dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { return nil }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    // MARK: A path from data

    /// Route paths made of what a user may type: line breaks, a whole request after them, NUL,
    /// controls, spaces, Unicode line separators, backslashes, an `@`, slashes that look like
    /// an authority.
    static let paths = [
        "/users/a\r\nX-Injected: 1", "/a\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: evil.invalid", "/a\nX-Injected: 1", "/a\rb",
        "/a\0b", "/a\tb", "/a b HTTP/1.0", "/a\u{7F}b", "/a\u{85}b", "/a\u{2028}b", "/a\\..\\admin", "@evil.invalid/x",
        "\\\\evil.invalid/x", "/x?q=a b&r=\r\nX-Injected: 1", "/x?q=\0#\r\n",
    ]

    /// Whatever the path holds, one request goes to the base URL's host, on a request line of
    /// three parts whose target is visible ASCII alone (the rest percent-encoded), with no
    /// field the path spelled; or the request fails typed and nothing is sent.
    @Test(arguments: paths) func aPathFromDataStaysOneRequestToTheBase(_ path: String) async throws {
        let wire = try Wire()
        let api = Self.api(APIConfiguration(baseURL: wire.baseURL + "/api", timeout: 30, retryPolicy: .never))
        let result = await (api.request(route: .get(path)) as Promise<Data>).result
        switch result {
        case .success:
            #expect(wire.requests.items.count == 1, "\(wire.requests.items)")
            let request = try #require(wire.requests.items.first)
            let line = Self.lines(of: request)[0].split(separator: " ", omittingEmptySubsequences: false)
            #expect(line.count == 3 && line[0] == "GET" && line[2] == "HTTP/1.1", "\(request.debugDescription)")
            let target = line.count == 3 ? line[1] : ""
            #expect(target.hasPrefix("/api/") && target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(request.debugDescription)")
            #expect(Self.fields("Host", in: request) == ["127.0.0.1:\(wire.port)"])
            #expect(Self.fields("X-Injected", in: request).isEmpty, "\(request.debugDescription)")
            #expect(!request.contains("smuggled HTTP"), "\(request.debugDescription)")
        case .failure(APIError.invalidRequest):
            #expect(wire.requests.items.isEmpty)
        case .failure(let error):
            Issue.record("\(path.debugDescription): \(error)")
        }
    }

    /// A path of 100 KB goes out whole, as one request.
    @Test func aLongPathGoesOutWholeAsOneRequest() async throws {
        let wire = try Wire()
        let api = Self.api(APIConfiguration(baseURL: wire.baseURL, timeout: 30, retryPolicy: .never))
        let path = "/" + String(repeating: "a", count: 100_000)
        _ = try await (api.request(route: .get(path)) as Promise<Data>).value
        #expect(wire.requests.items.map { Self.lines(of: $0)[0] } == ["GET \(path) HTTP/1.1"])
    }

    /// A path longer than libcurl sends fails before any connection, saying so: libcurl had
    /// refused the URL unread, and the request failed as "No URL set".
    @Test func aPathLongerThanTheTransportSendsFailsSayingSo() async throws {
        let wire = try Wire()
        let api = Self.api(APIConfiguration(baseURL: wire.baseURL, timeout: 30, retryPolicy: .never))
        let path = "/" + String(repeating: "a", count: 8_000_000)
        let error = await #expect(throws: APIError.self) { try await (api.request(route: .get(path)) as Promise<Data>).value }
        #expect(wire.requests.items.isEmpty)
        if TestTransport.isCurl {
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains(" bytes long; libcurl sends one of at most 8,000,000"), "\(message)")
        }
    }

    // MARK: An absolute URL from data

    /// An absolute route in another scheme than HTTP's (a URL read from an answer, or typed):
    /// the request fails as an invalid URL before any connection is made. Over URLSession,
    /// FoundationNetworking opened an FTP session to the host and waited for its greeting;
    /// libcurl refused it only once handed it, as an answer that "cannot be trusted".
    @Test(arguments: [
        "ftp://127.0.0.1:PORT/x", "FTP://127.0.0.1:PORT/x", "gopher://127.0.0.1:PORT/x", "dict://127.0.0.1:PORT/x", "telnet://127.0.0.1:PORT/x",
        "ws://127.0.0.1:PORT/x", "tern://127.0.0.1:PORT/x", "httpx://127.0.0.1:PORT/x", "file://localhost/etc/hostname", "data://x/,hello",
    ])
    func aRouteInAnotherSchemeFailsBeforeAnyConnection(_ url: String) async throws {
        let server = try RawServer { connection in _ = connection.readAvailable(for: 1) }
        defer { server.stop() }
        let api = Self.api(APIConfiguration(baseURL: "http://127.0.0.1:\(server.port)", timeout: 5, retryPolicy: .never))
        let route = url.replacingOccurrences(of: "PORT", with: String(server.port))
        let result = await (api.request(route: .get(route)) as Promise<Data>).result
        guard case .failure(APIError.invalidRequest(let invalid)) = result, case .invalidURL(let named) = invalid.reason else {
            Issue.record("\(route): \(result)")
            return
        }
        #expect(named == route)
        #expect(server.connections == 0)
    }

    // MARK: A header value from data

    /// A display name that is blank (spaces, a tab) is a field with an empty value (RFC 9110
    /// §5.5: the whitespace around a value is not part of it): the field goes out, empty, as
    /// an empty value does. libcurl, under either transport, drops a field whose value is
    /// blank, so a precondition (`If-Match`) or a marker the app set would silently vanish.
    @Test(arguments: ["", " ", "\t", "   ", " \t "]) func aBlankValueIsSentAsAnEmptyField(_ value: String) async throws {
        let wire = try Wire()
        let api = Self.api(APIConfiguration(baseURL: wire.baseURL, timeout: 30, retryPolicy: .never))
        _ = try await (api.request(route: .put("/x"), parameters: JSONParameters(["a": 1]),
                                   options: RequestOptions(headers: ["If-Match": value, "X-Name": value])) as Promise<Data>).value
        let request = try #require(wire.requests.items.first)
        #expect(Self.fields("If-Match", in: request) == [""], "\(request.debugDescription)")
        #expect(Self.fields("X-Name", in: request) == [""], "\(request.debugDescription)")
    }

    // MARK: A body on any method

    /// A request that cannot carry a body (a HEAD) given one whose bytes spell another request:
    /// the server reads one request and nothing after it, on the connection, within a second.
    @Test func aHeadsBodyNeverReachesTheWireAsAnotherRequest() async throws {
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        let heads = Recorder<String>()
        let after = Recorder<[UInt8]>()
        let server = try RawServer { connection in
            guard let head = connection.readHead() else { return }
            heads.append(head)
            after.append(connection.readAvailable(for: 1))
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        }
        defer { server.stop() }
        let api = Self.api(APIConfiguration(baseURL: server.baseURL, timeout: 30, retryPolicy: .never))
        let result = await (api.request(route: .head("/m"), parameters: BodyParameters(Data(smuggled.utf8))) as Promise<Data>).result
        switch result {
        case .success, .failure(APIError.invalidRequest), .failure(APIError.encodingFailed): break
        case .failure(let error): Issue.record("\(error)")
        }
        #expect(heads.items.count <= 1)
        for head in heads.items {
            #expect(head.hasPrefix("HEAD /m HTTP/1.1\r\n"), "\(head.debugDescription)")
            #expect(Self.fields("Content-Length", in: head).allSatisfy { $0 == "0" }, "\(head.debugDescription)")
            #expect(Self.fields("Transfer-Encoding", in: head).isEmpty, "\(head.debugDescription)")
        }
        #expect(after.items.allSatisfy { $0.isEmpty }, "\(after.items.map { String(decoding: $0, as: UTF8.self) })")
    }

    // MARK: A Location the server writes

    /// Locations that two URL parsers could read as two hosts (a backslash, `%2f` or `%23`
    /// before an `@`, a fragment or a query holding one), another spelling of another host,
    /// leading whitespace, two slashes: the request may go wherever libcurl reads the host to
    /// be, but `Authorization` and the API's key reach no host but the origin's.
    static let locations = [
        "http://127.0.0.1:PORT\\@localhost:PORT/b", "http://127.0.0.1:PORT%2f@localhost:PORT/b", "http://127.0.0.1:PORT%23@localhost:PORT/b",
        "http://localhost:PORT#@127.0.0.1:PORT/b", "http://localhost:PORT?@127.0.0.1:PORT/b", "http://localhost:PORT\\.127.0.0.1:PORT/b",
        "//localhost:PORT/b", " http://localhost:PORT/b", "\thttp://localhost:PORT/b", "http://LOCALHOST:PORT/b",
        "http://ＬＯＣＡＬＨＯＳＴ:PORT/b", "http://127.0.0.1%2elocalhost:PORT/b", "http://user:pass@localhost:PORT/b",
    ]

    @Test(arguments: locations) func aLocationThatSplitsParsersTakesNoCredentialAway(_ location: String) async throws {
        let wire = try Wire { request, port in
            guard request.hasPrefix("GET /a ") else { return RawServer.Connection.response("{}") }
            let to = location.replacingOccurrences(of: "PORT", with: String(port))
            return "HTTP/1.1 302 Found\r\nLocation: \(to)\r\nContent-Length: 0\r\n\r\n"
        }
        let api = Self.api(APIConfiguration(baseURL: wire.baseURL, commonHeaders: ["Authorization": "Bearer secret-token", "X-Api-Key": "secret-key"],
                                            timeout: 30, retryPolicy: .never,
                                            redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"])))
        let result = await (api.request(route: .get("/a")) as Promise<Data>).result
        switch result {
        case .success, .failure(APIError.redirectFailed), .failure(APIError.transportFailed): break
        case .failure(let error): Issue.record("\(error)")
        }
        let requests = wire.requests.items
        // The first request carried both: the test can fail.
        #expect(requests.first.map { Self.fields("Authorization", in: $0) } == ["Bearer secret-token"])
        #expect(requests.first.map { Self.fields("X-Api-Key", in: $0) } == ["secret-key"])
        for request in requests.dropFirst() where Self.fields("Host", in: request) != ["127.0.0.1:\(wire.port)"] {
            #expect(!request.contains("secret"), "\(request.debugDescription)")
        }
    }
}
