import Foundation
import Testing
import Tern
import TernTesting

/// Paginators against the catalog server, in each page style and against servers that loop.
@Suite(.onTestThreads) struct PaginatorTests {
    let catalog: CatalogServer
    var api: TestAPI { catalog.api }

    init() throws {
        catalog = try CatalogServer()
    }

    /// Loads pages until there is no next one, at most `limit`; returns the pages.
    func loadAll<Element>(_ paginator: Paginator<Element>, limit: Int = 10) async throws -> [Page<Element>] {
        var pages: [Page<Element>] = []
        while paginator.hasNextPage, pages.count < limit {
            pages.append(try await paginator.loadNextPage().value)
        }
        return pages
    }

    @Test func pageNumbersUntilAnEmptyPage() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered")))
        #expect(products.hasNextPage && !products.isLoading && products.elements.isEmpty)
        let pages = try await loadAll(products)
        #expect(pages.map(\.elements.count) == [2, 2, 1, 0])
        #expect(pages.map(\.position) == [0, 1, 2, 3])
        // The number the server knows each page by, the one in its query: from 1 here.
        #expect(pages.map(\.number) == [1, 2, 3, 4])
        #expect(pages.map(\.hasNext) == [true, true, true, false])
        #expect(products.elements.map(\.name) == ["item-1", "item-2", "item-3", "item-4", "item-5"])
        #expect(catalog.sent("page", to: "/numbered") == ["1", "2", "3", "4"])
        // After the last page, a load answers an empty page without a request.
        let after = try await products.loadNextPage().value
        #expect(after.elements.isEmpty && !after.hasNext && after.response == nil && after.position == 4)
        #expect(catalog.requests.items.count == 4)
    }

    @Test func pageParameterFirstPageQueryAndFiltersAreConfigurable() async throws {
        let request: APIRequest<[Product]> = APIRequest(.get("/numbered"), parameters: URLParameters(["per_page": 2]))
        let products = Paginator(api: api, request: request, style: .pageNumber(parameter: "page", first: 2), queryParameter: "q")
        products.query = "boots"
        products.filters = ["color": "red"]
        let pages = try await loadAll(products)
        #expect(products.elements.map(\.name) == ["boots-3-red", "boots-4-red", "boots-5-red"])
        #expect(pages.count == 3)
        #expect(pages.map(\.number) == [2, 3, 4])
        let sent = catalog.requests.items.map(\.query)
        #expect(sent == ["per_page=2&color=red&page=2&q=boots", "per_page=2&color=red&page=3&q=boots", "per_page=2&color=red&page=4&q=boots"])
    }

    @Test func cursorFromTheBodyUnderACollectionKeyPath() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/cursor")), style: .cursor(parameter: "after", from: .body("meta.next")),
                                          collectionKeyPath: "data.items")
        let pages = try await loadAll(products)
        #expect(pages.map(\.elements.count) == [2, 2, 1])
        #expect(pages.last?.hasNext == false)
        #expect(pages.allSatisfy { $0.number == nil }, "a cursor's pages have no number")
        #expect(products.elements.map(\.price) == [1, 2, 3, 4, 5])
        #expect(catalog.sent("after", to: "/cursor") == [nil, "c2", "c4"])
    }

    @Test func cursorFromAHeader() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/cursor")), style: .cursor(parameter: "after", from: .header("x-next")),
                                          collectionKeyPath: "data.items")
        _ = try await loadAll(products)
        #expect(products.elements.count == 5)
        #expect(catalog.sent("after", to: "/cursor") == [nil, "c2", "c4"])
    }

    @Test func numericCursorsAndNullEndTheCollection() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/cursor/numeric")), style: .cursor(parameter: "after", from: .body("next")),
                                          collectionKeyPath: "items")
        _ = try await loadAll(products)
        #expect(products.elements.count == 5)
        #expect(catalog.sent("after", to: "/cursor/numeric") == [nil, "2", "4"])
    }

    @Test func githubShapedLinkHeadersAreFollowedAsGiven() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/linked"), parameters: URLParameters(["per_page": 2])), style: .linkHeader)
        let pages = try await loadAll(products)
        #expect(pages.map(\.hasNext) == [true, true, false])
        #expect(products.elements.count == 5)
        // The next URL is requested exactly as the server wrote it.
        #expect(catalog.requests.items.map(\.query) == ["per_page=2", "page=2&per_page=2", "page=3&per_page=2"])
    }

    @Test func relativeLinksInSeveralFieldsWithSeveralRelations() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/linked/relative")), style: .linkHeader)
        _ = try await loadAll(products)
        #expect(products.elements.count == 5)
        #expect(catalog.requests.items.map(\.target) == ["/linked/relative", "/linked/relative?page=2", "/linked/relative?page=3"])
    }

    @Test func aServerThatLinksBackEndsPagination() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/linked/loop?page=1")), style: .linkHeader)
        let pages = try await loadAll(products)
        #expect(pages.count == 2)
        #expect(!products.hasNextPage)
        #expect(catalog.requests.items.count == 2)
    }

    @Test(arguments: ["http://localhost:PORT/numbered", "http://127.0.0.1:1/numbered", "https://127.0.0.1:PORT/numbered"])
    func aNextLinkToAnotherOriginIsNotFollowed(target: String) async throws {
        let port = catalog.baseURL.split(separator: ":").last.map(String.init) ?? ""
        let to = target.replacingOccurrences(of: "PORT", with: port)
        let request: APIRequest<[Product]> = APIRequest(.get("/linked/away"), parameters: URLParameters(["to": to], headers: ["Authorization": "Bearer secret"]))
        let products = Paginator(api: api, request: request, style: .linkHeader)
        let page = try await products.loadNextPage().value
        #expect(page.response?.link(rel: "next")?.absoluteString == to)
        // The next page is refused, typed and naming the link, with nothing sent: not a last page.
        #expect(page.hasNext && products.hasNextPage)
        let refused = await #expect(throws: APIError.self) { try await products.loadNextPage().value }
        guard case .invalidRequest(let failure)? = refused else {
            Issue.record("\(String(describing: refused))")
            return
        }
        #expect(failure.description.contains("the next page's link \(to) leads to another origin"), "\(failure)")
        #expect(products.lastError != nil)
        #expect(catalog.requests.items.count == 1)
    }

    @Test func aRepeatedCursorEndsPagination() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/cursor/stuck")), style: .cursor(from: .body("next")), collectionKeyPath: "items")
        let pages = try await loadAll(products)
        #expect(pages.count == 2)
        #expect(products.elements.count == 2)
        #expect(!products.hasNextPage)
    }

    @Test func aServerThatIgnoresThePageNumberEndsPagination() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/ignoring")))
        let pages = try await loadAll(products)
        #expect(pages.map(\.elements.count) == [2, 0])
        #expect(products.elements.map(\.name) == ["item-1", "item-2"])
        #expect(catalog.requests.items.count == 2)
    }

    @Test func concurrentLoadsShareOneRequest() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered"), parameters: URLParameters(["delay": 500])))
        let loads = (0..<8).map { _ in products.loadNextPage() }
        #expect(products.isLoading && products.isLoadingFirstPage)
        for load in loads {
            #expect(try await load.value.position == 0)
        }
        #expect(products.elements.count == 2)
        #expect(catalog.requests.items.count == 1)
        #expect(!products.isLoading)
    }

    @Test func cancellingOneWaiterKeepsTheLoadForTheOthers() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered"), parameters: URLParameters(["delay": 500])))
        let first = products.loadNextPage()
        let second = products.loadNextPage()
        first.cancel()
        #expect(try await second.value.elements.count == 2)
        #expect(await apiError(of: first)?.isCancellation == true)
    }

    @Test func cancellingEveryWaiterCancelsTheRequestAndThePageCanBeLoadedAgain() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered"), parameters: URLParameters(["stall": "first"])))
        let load = products.loadNextPage()
        #expect(await eventually { catalog.requests.items.count == 1 })
        load.cancel()
        #expect(await apiError(of: load)?.isCancellation == true)
        // At once: the cancelled load is not joined, a new one begins.
        let page = try await products.loadNextPage().value
        #expect(page.position == 0 && page.elements.count == 2)
        #expect(products.lastError == nil && products.elements.count == 2 && !products.isLoading)
        // The client closed the cancelled load's socket: only the second load's may be left.
        #expect(await eventuallyClosed(catalog.server, leaving: 1), "\(TCPSockets.describe(port: catalog.server.port))")
    }

    @Test func aNewQueryCancelsTheLoadInFlightAndStartsOver() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered")))
        products.filters = ["stall": "always"]
        products.query = "boots"
        let stale = products.loadNextPage()
        #expect(await eventually { catalog.requests.items.count == 1 })
        products.query = "sandals"
        #expect(!products.isLoading)
        #expect(await apiError(of: stale)?.isCancellation == true)
        #expect(await eventuallyClosed(catalog.server))
        products.filters = [:]
        let page = try await products.loadNextPage().value
        #expect(page.position == 0)
        #expect(products.elements.map(\.name) == ["sandals-1", "sandals-2"])
        #expect(catalog.sent("q", to: "/numbered") == ["boots", "sandals"])
    }

    @Test func refreshReplacesTheElementsWithTheFirstPage() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/numbered")))
        _ = try await loadAll(products, limit: 2)
        #expect(products.elements.count == 4)
        let first = try await products.refresh().value
        #expect(first.position == 0)
        #expect(products.elements.map(\.name) == ["item-1", "item-2"])
        #expect(catalog.sent("page", to: "/numbered") == ["1", "2", "1"])
    }

    @Test func aFailedPageIsKeptAsTheLastErrorAndLoadedAgainNextTime() async throws {
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/nowhere")))
        let error = await apiError(of: products.loadNextPage())
        #expect(error?.caseName == "unacceptableStatus")
        #expect((products.lastError as? APIError)?.caseName == "unacceptableStatus")
        #expect(products.hasNextPage && !products.isLoading)
        _ = await products.loadNextPage().result
        #expect(catalog.requests.items.count == 2)
    }

    @Test func aPageThatDoesNotDecodeFailsWithTheParsingError() async throws {
        // The body is an object: the elements sit under a key path this paginator was not told.
        let products = Paginator<Product>(api: api, request: APIRequest(.get("/cursor")), style: .cursor(from: .body("meta.next")))
        let error = await apiError(of: products.loadNextPage())
        #expect(error?.caseName == "parsingFailed")
        #expect(products.elements.isEmpty)
    }

    @Test func aPostWithABodyKeepsItOnEveryPage() async throws {
        let request: APIRequest<[Product]> = APIRequest(.post("/search"), parameters: JSONParameters(["term": "tern"]))
        let products = Paginator(api: api, request: request)
        _ = try await loadAll(products)
        #expect(products.elements.map(\.name) == ["tern"])
        #expect(catalog.requests.items.map(\.method) == ["POST", "POST"])
        #expect(catalog.requests.items.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"term":"tern"}"#, #"{"term":"tern"}"#])
    }
}
