import Foundation
import Testing
import Tern
import TernTesting

/// A user and password written in the base URL (`http://alice:secret@host`) are a credential the
/// transport sends as `Authorization: Basic …` (CachingResponses.md: "a user and password in its
/// URL, which the transport sends as one"). RetriesAndRedirects.md promises "**Credentials stay
/// at their origin** (scheme, host and port). … Same-origin hops keep everything, on every
/// platform."
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct URLCredentialSameOriginRedirectAttackTests {
    static let basic = "Basic " + Data("alice:secret".utf8).base64EncodedString()

    static func authorization(in request: String) -> [String] {
        let head = request.components(separatedBy: "\r\n\r\n").first ?? request
        return head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "authorization" else { return nil }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    /// A 302 whose `Location` names the same origin absolutely (`http://127.0.0.1:PORT/b`, as
    /// most servers write it): the hop stays home, so it should keep the URL's credential as it
    /// keeps a header's. Tern resolves the `Location` into a URL without the user-info and sends
    /// the second request with no `Authorization` at all, so the server answers 401 to a
    /// signed-in app (the first request carried `Basic`, so the credential was there).
    @Test(arguments: [302, 307])
    func aSameOriginAbsoluteLocationKeepsTheURLsCredential(_ status: Int) async throws {
        let wire = try KeepingServer { request, port in
            guard request.hasPrefix("GET /a ") else { return RawServer.Connection.response("{}") }
            return "HTTP/1.1 \(status) Moved\r\nLocation: http://127.0.0.1:\(port)/b\r\nContent-Length: 0\r\n\r\n"
        }
        let base = wire.baseURL.replacingOccurrences(of: "http://", with: "http://alice:secret@")
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: base, timeout: 30, retryPolicy: .never),
                              transport: TestTransport.make(), responseQueue: .global())
        _ = await (api.request(route: .get("/a")) as Promise<Data>).result
        let requests = wire.requests.items
        try #require(requests.count == 2, "\(requests)")
        // The URL's credential went out on the first request: the test can fail.
        #expect(Self.authorization(in: requests[0]) == [Self.basic], "\(requests[0].debugDescription)")
        #expect(requests[1].hasPrefix("GET /b "))
        #expect(Self.authorization(in: requests[1]) == [Self.basic], "same-origin hop lost the credential: \(requests[1].debugDescription)")
    }
}
