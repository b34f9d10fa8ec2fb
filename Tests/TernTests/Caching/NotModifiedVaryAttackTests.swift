import Foundation
import Testing
import Tern
import TernTesting

/// A `304` (or a `HEAD`'s `200`) with another `Vary` than the response it confirms (a proxy in
/// front answering for the origin, with its own `Vary: Accept-Encoding`): the kept body is the
/// one the old `Vary` chose, which the answer no longer says, so it answers this request and
/// is forgotten. Keyed on the answer's `Vary`, the French page answered English requests as a
/// fresh hit.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct NotModifiedVaryAttackTests {
    @Test(arguments: [false, true]) func aConfirmationWithAnotherVaryServesTheBodyOnlyToItsLanguage(byHead: Bool) async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let french = request.contains("Accept-Language: fr")
                let answer = if request.contains("If-None-Match: \"fr\"") || request.hasPrefix("HEAD ") {
                    "HTTP/1.1 \(request.hasPrefix("HEAD ") ? "200 OK" : "304 Not Modified")\r\nETag: \"fr\"\r\nContent-Length: 7\r\n"
                        + "Cache-Control: max-age=600\r\nVary: Accept-Encoding\r\n\r\n"
                } else {
                    RawServer.Connection.response(french ? "bonjour" : "hello", headers: "ETag: \"\(french ? "fr" : "en")\"\r\nCache-Control: max-age=0\r\nVary: Accept-Language\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache()),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/doc"
        let french = RequestOptions(headers: ["Accept-Language": "fr"])
        let first: Response = try await api.request(route: .get(url), options: french).value
        #expect(String(decoding: first.body, as: UTF8.self) == "bonjour")
        if byHead {
            _ = try await (api.request(route: .head(url), options: french) as Promise<Response>).value
        } else {
            let confirmed: Response = try await api.request(route: .get(url), options: french).value
            #expect(confirmed.cacheOutcome == .revalidated)
        }
        let english: Response = try await api.request(route: .get(url), options: RequestOptions(headers: ["Accept-Language": "en"])).value
        #expect(String(decoding: english.body, as: UTF8.self) == "hello", "served \(String(decoding: english.body, as: UTF8.self)), \(String(describing: english.cacheOutcome))")
        let again: Response = try await api.request(route: .get(url), options: french).value
        #expect(String(decoding: again.body, as: UTF8.self) == "bonjour")
    }
}
