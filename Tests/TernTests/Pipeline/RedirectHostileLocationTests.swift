import Foundation
import Testing
@testable import Tern
import TernTesting

/// Redirects a hostile server writes: a `Location` in raw bytes that are no UTF-8, with spaces,
/// far too long; a chain whose other origin then needs a retry. Followed to the URL meant, or
/// failed typed, once; the other origin never gets a credential.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectHostileLocationTests: EarlyAnswerAttack {
    /// Answers `GET /start` with a 302 whose `Location` field is `location`, byte for byte, and
    /// anything else with its request target as the body.
    static func server(location: [UInt8], received: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let target = String(request.split(separator: " ")[1])
                received.append(target)
                if target == "/start" {
                    connection.send(Array("HTTP/1.1 302 Found\r\nContent-Length: 0\r\nLocation: ".utf8) + location + Array("\r\n\r\n".utf8))
                } else {
                    connection.send(RawServer.Connection.response(target))
                }
            }
        }
    }

    @Test(arguments: [
        (Array("/caf\u{E9} x?q=\u{FC}".utf8), "/caf%C3%A9%20x?q=%C3%BC"),
        ([0x2F, 0x63, 0x61, 0x66, 0xE9], nil),  // Latin-1 "/café": no UTF-8
        (Array("/next".utf8) + [0x00], nil),
        (Array(("/" + String(repeating: "a", count: 70_000)).utf8), nil),
    ] as [([UInt8], String?)])
    func aLocationOfHostileBytes(location: [UInt8], lands: String?) async throws {
        let received = Recorder<String>()
        let server = try Self.server(location: location, received: received)
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL, timeout: 10, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get("/start")) as Promise<String>)
        #expect(results.count == 1)
        switch results.first {
        case .success(let body)?:
            // Followed: to the URL the bytes spell, percent-encoded, on the same server.
            #expect(received.items.count == 2)
            if let lands { #expect(body == lands) } else { #expect(body.hasPrefix("/"), "followed to \(body.prefix(80))") }
        case .failure(let error as APIError)?:
            #expect(lands == nil, "\(error)")
        case let other:
            Issue.record("\(String(describing: other))")
        }
    }

    /// A chain that left the origin, then a 503 there retried: the retry goes to the other
    /// origin again, still without credentials, the delegate still not asked.
    @Test func aRetryOffTheOriginStaysBare() async throws {
        let awayReceived = Recorder<RecordedRequest>()
        let away = try LoopbackServer { request in
            awayReceived.append(request)
            return awayReceived.items.count == 1 ? .text("busy", status: 503) : .json(Echo(request))
        }
        defer { away.stop() }
        let home = try RedirectTests.OtherOrigin()
        let retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false)
        let api = try TestAPI(configuration: APIConfiguration(baseURL: home.baseURL, commonHeaders: ["Authorization": "Basic dXNlcjpwYXNz"],
                                                              retryPolicy: retry))
        let signer = RedirectTests.Signer()
        api.delegate = signer
        let echo: Echo = try await api.request(route: .get(RedirectTests.redirect(302, to: away.baseURL + "/echo"))).value
        #expect(echo.path == "/echo")
        #expect(awayReceived.items.count == 2)
        #expect(awayReceived.items.allSatisfy { $0.headers["Authorization"] == nil }, "\(awayReceived.items.map(\.headers))")
        #expect(signer.signed.items.count == 1)
        #expect(home.received.items.count == 1, "the retry went back to the origin")
    }
}
