import Foundation
import Testing
@testable import Tern
import TernTesting

/// What attacking session 45's rewrites at their seams found: an uppercase scheme and a
/// redirect's large body, fixed; an informational head over FoundationNetworking and a
/// redirect's stalled body, documented (the Linux and Retries and Redirects articles) and held
/// to what the documents say.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SeamFindingsTests: EarlyAnswerAttack {
    /// A scheme is case-insensitive (RFC 3986 §3.1): a `Location` or a base URL that spells it
    /// `HTTP` names the same server. The redirect check lowercases it, then hands the URL on as
    /// it came, and FoundationNetworking's URLSession refuses it (URLError -1002, unsupported
    /// URL): a request libcurl completes fails on the other transport.
    @Test(arguments: ["location", "base"])
    func anUppercaseSchemeReachesTheServerOnEveryTransport(spelledIn place: String) async throws {
        let received = Recorder<RecordedRequest>()
        let server = try LoopbackServer { request in
            received.append(request)
            return request.path == "/moved" ? ServerResponse(status: 302, headers: ["Location": "HTTP://127.0.0.1:\(request.headers["Host"]?.split(separator: ":").last ?? "")/echo"]) : .json(Echo(request))
        }
        defer { server.stop() }
        let base = place == "base" ? "HTTP://127.0.0.1:\(server.port)" : server.baseURL
        let api = try TestAPI(configuration: APIConfiguration(baseURL: base, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get(place == "base" ? "/echo" : "/moved")) as Promise<Echo>)
        #expect(results.count == 1)
        guard case .success(let echo)? = results.first else {
            Issue.record("\(String(describing: results.first))")
            return
        }
        #expect(echo.path == "/echo")
    }

    /// `103 Early Hints`, an unasked `100 Continue` and `102 Processing` before the final head
    /// (RFC 9110 §15.2: a client must accept 1xx responses it did not expect). libcurl skips
    /// them; FoundationNetworking's URLSession takes the 1xx for the response, and the request
    /// fails after it, typed (URLError -1011), as the Linux article says.
    @Test(arguments: ["103 Early Hints\r\nLink: </style.css>; rel=preload", "100 Continue", "102 Processing"], Reading.allCases)
    func anInformationalHeadBeforeTheFinalOne(informational: String, reading: Reading) async throws {
        let text = ExchangeEventsWireTests.text
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.1 \(informational)\r\n\r\n")
            connection.pause(10)
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
        }
        defer { server.stop() }
        let result = try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/hinted")
        if TestTransport.isCurl {
            ExchangeEventsWireTests.expectText(result)
        } else {
            #expect(result.flatMap { try? $0.get() } == nil && result.map { if case .failure(.transportFailed) = $0 { true } else { false } } == true,
                    "\(String(describing: result))")
        }
    }

    /// A redirect whose own body is over the response size limit: the limit is the answer's,
    /// and the redirect is followed, as by URLSession, Alamofire and curl. Tern holds the 302's
    /// announced length to the limit before the redirect policy sees it, and fails with
    /// responseTooLarge ("it announced 4000 bytes") naming the redirect's URL.
    @Test(arguments: [Reading.request, .download, .stream])
    func aRedirectsLargeBodyIsNotTheAnswers(reading: Reading) async throws {
        let server = try ExchangeEventsWireTests.server { connection, request in
            if request.hasPrefix("GET /moved") {
                let page = String(repeating: "m", count: 4_000)
                connection.send("HTTP/1.1 302 Found\r\nLocation: /final\r\nContent-Type: text/html\r\nContent-Length: \(page.utf8.count)\r\n\r\n\(page)")
            } else {
                connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(ExchangeEventsWireTests.text.utf8.count)\r\n\r\n\(ExchangeEventsWireTests.text)")
            }
        }
        defer { server.stop() }
        let configuration = APIConfiguration(timeout: 10, maximumResponseSize: SizeLimit(bytes: 1_000), retryPolicy: .never)
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/moved", configuration: configuration))
    }

    /// A redirect whose body stalls (its length announced, none sent, the connection kept open):
    /// Tern reads a redirect's body before the next leg, as curl does, so the request ends at
    /// its timeout, typed, as the Retries and Redirects article says; never a hang.
    @Test func aRedirectWhoseBodyStallsEndsAtTheTimeout() async throws {
        let text = ExchangeEventsWireTests.text
        let server = try ExchangeEventsWireTests.server { connection, request in
            if request.hasPrefix("GET /moved") {
                connection.send("HTTP/1.1 302 Found\r\nLocation: /final\r\nContent-Length: 100\r\n\r\n")
                _ = connection.readAvailable(for: 5)
            } else {
                connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
            }
        }
        defer { server.stop() }
        let configuration = APIConfiguration(timeout: 1, retryPolicy: .never)
        let result = try await ExchangeEventsWireTests.reading(.request, server.baseURL + "/moved", configuration: configuration)
        guard case .failure(let error)? = result else {
            Issue.record("\(String(describing: result))")
            return
        }
        #expect(error.caseName == "timeout", "\(error)")
    }
}
