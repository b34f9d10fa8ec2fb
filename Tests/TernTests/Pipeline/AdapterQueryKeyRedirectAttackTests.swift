import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An adapter that signs each request with the API's key in its query (`?key=…`, as Google's
/// and many other APIs take it), and a redirect to another origin.
///
/// Promised (`RedirectPolicy`, `RequestAdapter`, and `RedirectTests.anAdapterCannotPutCredentialsBackOnAnotherOrigin`):
/// credentials stay at their origin; once a redirect leaves it, the delegate neither signs nor
/// refreshes, and what an adapter adds to "sign it" does not follow. Tern runs the adapters
/// again on every hop, the other origin's too (`RequestExecution.attempt`), and takes back only
/// the credential headers after them (`Leg.removeCredentials`): the key the adapter put in the
/// URL went to the host the redirect named, in its request line.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AdapterQueryKeyRedirectAttackTests {
    struct QueryKey: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws {
            guard let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return }
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "key", value: "SECRET-API-KEY")]
            request.url = components.url
        }
    }

    @Test func aKeyAnAdapterPutsInTheQueryStaysAtItsOrigin() async throws {
        let heard = Recorder<String>()
        let elsewhere = try RawServer { connection in
            while let request = connection.readRequest() {
                heard.append(request.split(separator: "\r\n").first.map(String.init) ?? request)
                guard connection.send(RawServer.Connection.response("landed")) else { return }
            }
        }
        defer { elsewhere.stop() }
        let home = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send("HTTP/1.1 302 Found\r\nLocation: \(elsewhere.baseURL)/landing\r\nContent-Length: 0\r\n\r\n") else { return }
            }
        }
        defer { home.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, adapters: [QueryKey()]),
                              transport: TestTransport.make(), responseQueue: .global())
        let body: String = try await api.request(route: .get(home.baseURL + "/start")).value
        #expect(body == "landed")
        #expect(heard.items.count == 1)
        #expect(!heard.items.contains { $0.contains("SECRET-API-KEY") }, "the other origin heard \(heard.items)")
    }
}
