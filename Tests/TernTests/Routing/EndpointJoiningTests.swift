import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads) struct EndpointJoiningTests {
    @Test(arguments: [
        ("https://x.io/api/v2", "/products", "https://x.io/api/v2/products"),
        ("https://x.io/api/v2/", "/products", "https://x.io/api/v2/products"),
        ("https://x.io/api/v2/", "products", "https://x.io/api/v2/products"),
        ("https://x.io/api/v2", "products", "https://x.io/api/v2/products"),
        ("https://x.io/api/v2//", "//products", "https://x.io/api/v2/products"),
        ("https://x.io", "/products", "https://x.io/products"),
        ("https://x.io/", "", "https://x.io/"),
        ("https://x.io/api", "", "https://x.io/api"),
        ("https://x.io/api?key=k", "/items", "https://x.io/api/items?key=k"),
        ("https://x.io/api?key=k", "/items?page=2", "https://x.io/api/items?key=k&page=2"),
        ("https://x.io/api", "/items?page=2#top", "https://x.io/api/items?page=2#top"),
        ("https://x.io/api", "https://other.io/z?q=1", "https://other.io/z?q=1"),
        ("https://x.io/api", "http://127.0.0.1:8080/z", "http://127.0.0.1:8080/z"),
        ("https://x.io/api", "/users/a%20b", "https://x.io/api/users/a%20b"),
        // Joined as bytes: characters of more than one byte stay whole.
        ("https://x.io/café/", "/ünï/🐦", "https://x.io/café/ünï/🐦"),
        ("https://x.io/", "/", "https://x.io/"),
        ("https://x.io/api", "///", "https://x.io/api/"),
    ])
    func joinsWithExactlyOneSlash(base: String, endpoint: String, expected: String) {
        #expect(EndpointJoining.join(base: base, endpoint: endpoint) == expected)
    }

    /// A base read once joins every relative endpoint as ``EndpointJoining`` does, and says the
    /// URL needs no check only where checking it could not fail or change it.
    @Test(arguments: [
        ("https://x.io/api/v2", "/products", true),
        ("https://x.io", "products", true),
        ("https://x.io/", "", true),
        ("http://user:pw@127.0.0.1:8080/api/", "//evil.io/x", true),
        ("https://x.io/api", "/items?page=2", false),
        ("https://x.io/api", "/items#top", false),
        ("https://x.io/api?key=k", "/items", false),
        ("HTTPS://x.io/api", "/items", false),
        ("https:///api", "/items", false),
        ("https://x.io:99999/api", "/items", false),
        ("x.io/api", "/items", false),
    ])
    func aBaseReadOnceJoinsAsEveryRequestWould(base: String, endpoint: String, isChecked: Bool) {
        let joined = BaseURL(base).joined(endpoint)
        #expect(joined.url == EndpointJoining.join(base: base, endpoint: endpoint))
        #expect(joined.isChecked == isChecked)
        if isChecked {
            #expect(AbsoluteURL.hasSchemeAndHost(joined.url) && AbsoluteURL.lowercasingScheme(joined.url) == joined.url)
        }
    }

    @Test func baseAPIBuildsRoutesForEveryMethod() {
        struct API: BaseAPI { let baseURL = "https://x.io/v1/" }
        let api = API()
        #expect(api.get(endpoint: "/a") == Route(method: .get, url: "https://x.io/v1/a"))
        #expect(api.post(endpoint: "a").method == .post)
        #expect(api.put(endpoint: "a").method == .put)
        #expect(api.patch(endpoint: "a").method == .patch)
        #expect(api.delete(endpoint: "a").method == .delete)
        #expect(api.head(endpoint: "a").method == .head)
        #expect(api.options(endpoint: "a").method == .options)
        #expect(api.route("PURGE", endpoint: "/cache") == Route(method: "PURGE", url: "https://x.io/v1/cache"))
        #expect(Route.get("https://y.io").description == "GET https://y.io")
    }
}
