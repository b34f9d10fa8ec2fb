import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// An API whose base URL carries a user and password (CachingResponses.md: "a user and password
/// in its URL, which the transport sends as one"), paging by `Link` headers, with a cache.
///
/// Promised (Pagination.md): "Next links are followed as the server wrote them …, resolved
/// against the URL that answered"; ResponsesAndErrors.md: "relative targets resolved against the
/// URL that answered (after redirects)"; CachingResponses.md: "Keep responses and answer from
/// them …, the same over every transport": an answer from the cache is the answer the server
/// gave.
///
/// What goes wrong: an answer from the cache has the cache's key for its URL
/// (`CachedAnswer.deliver` makes the head from `CachedResponse.url`, which `CacheKey.of`
/// stripped of the user and password, and of the fragment). The same page, answered from the
/// network, resolves its next link against `http://reader:s3cret@host/v1/items`; answered from the
/// cache, against `http://host/v1/items`. The next page then goes without the URL's credentials:
/// no `Authorization`, a `401`, and the walk that succeeded the first time fails the second, only
/// because its first page was kept.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct KeptLinkBaseAttackTests {
    @Test func aKeptPagesNextLinkKeepsTheURLsCredentials() async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let signed = request.contains("\r\nAuthorization: Basic ")
                let answer = if !signed {
                    RawServer.Connection.response("{}", status: "401 Unauthorized", headers: "Content-Type: application/json\r\n")
                } else if request.hasPrefix("GET /v1/items?page=2 ") {
                    RawServer.Connection.response("[2]", headers: "Content-Type: application/json\r\nCache-Control: no-store\r\n")
                } else {
                    RawServer.Connection.response("[1]", headers: "Content-Type: application/json\r\nLink: <items?page=2>; rel=\"next\"\r\n"
                                                      + "Cache-Control: public, max-age=600\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let base = server.baseURL.replacingOccurrences(of: "http://", with: "http://reader:s3cret@")
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: base, timeout: 20, retryPolicy: .never, cache: HTTPCache()),
                              transport: TestTransport.make(), responseQueue: .global())
        let items = APIRequest<[Int]>(.get("/v1/items"))
        func walk() async -> String {
            var elements: [Int] = []
            do {
                for try await page in api.pages(items, style: .linkHeader) { elements += page.elements }
                return "\(elements)"
            } catch {
                return "\(elements), then \(error)"
            }
        }
        let fromTheNetwork = await walk()
        #expect(fromTheNetwork == "[1, 2]")
        let firstPageKept = await walk()
        #expect(firstPageKept == fromTheNetwork)
        let unsigned = requests.items.filter { !$0.contains("\r\nAuthorization: ") }
        #expect(unsigned.isEmpty, "sent without the URL's credentials: \(unsigned.map { $0.prefix { $0 != "\r" } })")
    }
}
