import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Heads a well-behaved server sends that test an exchange's one-head rule: an informational head
/// before the final one, a body that ends with the connection, a download's redirect, a refusal
/// the delegate judges while its body arrives. Each is read into memory, a file and a stream.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ExchangeHeadsWireTests: EarlyAnswerAttack {
    static let text = ExchangeEventsWireTests.text

    /// `103 Early Hints` or an unasked `100 Continue` before the final head (RFC 9110 §15.2: a
    /// client must accept 1xx responses it did not expect): the final head and its body are the
    /// answer, not a second head that fails the exchange. Over libcurl here; FoundationNetworking's
    /// URLSession fails it (see SeamBreakTests on the breaks branch).
    @Test(.enabled(if: TestTransport.isCurl), arguments: ["103 Early Hints\r\nLink: </style.css>; rel=preload", "100 Continue", "102 Processing"], Reading.allCases)
    func anInformationalHeadBeforeTheFinalOne(informational: String, reading: Reading) async throws {
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.1 \(informational)\r\n\r\n")
            connection.pause(10)
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.text.utf8.count)\r\n\r\n\(Self.text)")
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/hinted"))
    }

    /// An HTTP/1.0 answer with neither length nor chunks: its body ends with the connection.
    @Test(arguments: Reading.allCases)
    func aBodyThatEndsWithTheConnection(reading: Reading) async throws {
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            for line in Self.text.split(separator: "\n") {
                connection.send(line + "\n")
                connection.pause(5)
            }
            shutdown(connection.socket, Int32(SHUT_RDWR))
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/closing"))
    }

    /// A download redirected to another origin: the file holds the final body alone.
    @Test func aRedirectedDownloadHoldsTheFinalBody() async throws {
        let final = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.text.utf8.count)\r\n\r\n\(Self.text)")
        }
        defer { final.stop() }
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send(RawServer.Connection.response("moved away", status: "307 Temporary Redirect", headers: "Location: \(final.baseURL)/file\r\n"))
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(.download, server.baseURL + "/file"))
    }

    /// A cached answer revalidated with a 304 that carries the representation's length and no
    /// body (as RFC 9110 §8.6 allows), or a body where none may be: the cached body is the
    /// answer, at once, and the next request on the connection gets its own.
    @Test(arguments: ["", "hello"])
    func aRevalidationAnsweredWithALength(bodyAfter304: String) async throws {
        let text = Self.text
        let revalidations = Recorder<Int>()
        let server = try ExchangeEventsWireTests.server { connection, request in
            if request.hasPrefix("GET /next") {
                connection.send(RawServer.Connection.response("next"))
            } else if request.lowercased().contains("if-none-match: \"v1\"") {
                revalidations.append(1)
                connection.send("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(bodyAfter304)")
            } else {
                connection.send("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
            }
        }
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL, timeout: 5, retryPolicy: .never, cache: HTTPCache()))
        for _ in 0..<2 {
            let results = await Self.results(of: api.request(route: .get("/doc")) as Promise<String>)
            #expect(results.count == 1)
            guard case .success(let body)? = results.first else {
                Issue.record("\(String(describing: results.first))")
                return
            }
            #expect(body == text)
        }
        #expect(revalidations.items.count == 1)
        let next = await Self.results(of: api.request(route: .get("/next")) as Promise<String>)
        switch next.first {
        case .success(let body)?: #expect(body == "next")
        case .failure(let error as APIError)?: #expect(error.caseName == "transportFailed", "\(error)")
        case let other: Issue.record("\(String(describing: other))")
        }
    }

    /// Signs with a token that a refresh replaces; asks for a refresh on a 401.
    final class Refreshing: APIDelegate, @unchecked Sendable {
        let tokens = Recorder<Int>()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(tokens.items.count)", forHTTPHeaderField: "Authorization")
        }
        func api(_ api: AbstractAPI, needsRefreshFor response: HTTPURLResponse, data: Data, request: URLRequest) -> Bool {
            response.statusCode == 401
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            tokens.append(1)
            let (promise, resolver) = Promise<Void>.pending(in: .global())
            resolver.fulfill(())
            return promise
        }
    }

    /// A 401 whose body comes a byte at a time while the delegate judges its head: the refresh
    /// and the replay's answer are the stream's, and nothing of the refusal leaks into it.
    @Test(arguments: [Reading.request, .download, .stream, .streamWithPlugin])
    func aRefusalsBodyHeldWhileTheDelegateJudgesNeverLeaks(reading: Reading) async throws {
        let text = Self.text
        let server = try ExchangeEventsWireTests.server { connection, request in
            if request.contains("Bearer 0") {
                guard connection.send("HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
                for byte in "denied\nnope\n".utf8 { guard connection.send(Array("1\r\n".utf8) + [byte] + Array("\r\n".utf8)) else { return } }
                connection.send("0\r\n\r\n")
            } else {
                connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
            }
        }
        defer { server.stop() }
        let delegate = Refreshing()
        let apiGone: WeakRef<AbstractAPI>
        do {
            let api = AbstractAPI(configuration: Self.configuration(reading), transport: TestTransport.make(), responseQueue: .global())
            api.delegate = delegate
            apiGone = WeakRef(api)
            let result = try await Self.inDirectory { try await Self.read(reading, from: api, url: server.baseURL + "/private", in: $0) }
            ExchangeEventsWireTests.expectText(result)
        }
        #expect(delegate.tokens.items.count == 1)
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived its request")
    }
}
