import Foundation

/// Loads a collection page by page, keeping what it has loaded: the successor of Opera's
/// `PaginationRequest` and `PaginationViewModel`, with no UI framework attached.
///
/// ```swift
/// let products = Paginator<Product>(api: api, request: .get("/products"), style: .pageNumber())
///
/// products.query = "boots"                        // starts over, cancelling a load in flight
/// let first = try await products.loadNextPage().value
/// if products.hasNextPage { _ = try await products.loadNextPage().value }
/// show(products.elements)
/// ```
///
/// Each page goes through the API's whole pipeline (delegate, refresh, retries, plugins) and is
/// decoded by its parser. A call while a load runs waits for that load instead of starting
/// another, so no page is loaded twice. Pagination ends on a page without a next page, an empty
/// page, a next URL or cursor already followed, or a page identical to the one before: a server
/// that loops cannot make a paginator loop. A next link to another origin (scheme, host, port)
/// than the first page's is not followed: loading it fails with ``APIError/invalidRequest(_:)``,
/// since the API would sign that request with its credentials.
package final class Paginator<Element: Decodable & Sendable>: Sendable {
    /// The API the pages come from.
    package let api: AbstractAPI
    /// The request for the first page; later pages add to its query, or follow links.
    package let request: APIRequest<[Element]>
    /// How pages are numbered.
    package let style: PageStyle
    /// The query parameter ``query`` is sent as.
    package let queryParameter: String
    private let parser: any ResponseParser
    /// Where the first page is, and so where next links may lead.
    private let origin: Origin?
    private let state: Locked<PaginationState<Element>>

    /// Creates a paginator; nothing is loaded until ``loadNextPage()``.
    ///
    /// - Parameters:
    ///   - api: Where requests go.
    ///   - request: The first page's request; its value type names the elements.
    ///   - style: Page numbers (the default, Opera's `page` from 1), cursors, or `Link` headers.
    ///   - queryParameter: The name ``query`` is sent under; Opera's `q` by default.
    ///   - collectionKeyPath: Dot-separated keys to the elements inside the body, such as
    ///     `"data.items"`, decoded with the parser's `JSONDecoder`; `nil` when the body is the
    ///     array.
    ///   - keepsElements: Whether ``elements`` gathers every page's.
    package init(
        api: AbstractAPI,
        request: APIRequest<[Element]>,
        style: PageStyle = .pageNumber(),
        queryParameter: String = "q",
        collectionKeyPath: String? = nil,
        keepsElements: Bool = true
    ) {
        state = Locked(PaginationState(keepsElements: keepsElements))
        self.api = api
        self.request = request
        self.style = style
        self.queryParameter = queryParameter
        let parser = request.options.parser ?? api.responseParser
        origin = URL(string: request.route(in: api).url).flatMap(Origin.init)
        self.parser = collectionKeyPath.map { JSONParser(decoder: (parser as? JSONParser)?.decoder ?? JSONDecoder(), keyPath: $0) } ?? parser
    }

    // MARK: State

    /// Every element loaded so far, page after page.
    package var elements: [Element] { state.withLock { $0.elements } }
    /// Whether there may be another page: `true` before the first load.
    package var hasNextPage: Bool { state.withLock { $0.next != nil } }
    /// Whether a page is loading.
    package var isLoading: Bool { state.withLock { $0.load != nil } }
    /// Whether the page loading is the first.
    package var isLoadingFirstPage: Bool { state.withLock { $0.isLoadingFirstPage } }
    /// Why the last load failed, until a load succeeds or pagination starts over.
    package var lastError: (any Error)? { state.withLock { $0.lastError } }

    /// The search text, sent under the `queryParameter` given at creation. Setting it starts
    /// over: the elements are forgotten and a load in flight is cancelled; ``loadNextPage()``
    /// then loads the first page.
    package var query: String? {
        get { state.withLock { $0.search.query } }
        set { startOver { $0.query = newValue } }
    }

    /// Filters sent in each page's query, encoded like ``URLParameters``. Setting them starts
    /// over, as setting ``query`` does.
    package var filters: [String: any Sendable] {
        get { state.withLock { $0.search.filters } }
        set { startOver { $0.filters = newValue } }
    }

    // MARK: Loading

    /// Loads the next page, or waits for the load already running; answers an empty page with
    /// ``Page/hasNext`` `false` once there is nothing more.
    ///
    /// Cancelling the promise cancels the request once no other caller waits for it.
    package func loadNextPage() -> Promise<Page<Element>> {
        let queue = request.options.responseQueue ?? api.responseQueue
        let start = state.withLock { state in
            state.start(pageNumber: style.number(of:)) { Promise<Page<Element>>(queue: queue, state: PromiseState()) }
        }
        switch start {
        case .join(let promise):
            return promise.passedOn()
        case .exhausted(let index):
            return Promise(value: Page(elements: [], position: index, hasNext: false, response: nil), in: queue)
        case .begin(let load):
            send(load)
            return load.promise.passedOn()
        }
    }

    /// Starts over and loads the first page again: the elements are replaced once it arrives.
    package func refresh() -> Promise<Page<Element>> {
        startOver { _ in }
        return loadNextPage()
    }

    private func startOver(changing change: (inout PaginationState<Element>.Search) -> Void) {
        let stale = state.withLock { state in
            var search = state.search
            change(&search)
            return state.startOver(with: search)
        }
        stale?.promise.cancel()
    }

    /// Sends the request for `load`'s page and settles its promise with what comes back.
    private func send(_ load: PaginationState<Element>.Load) {
        if case .elsewhere(let url) = load.cursor {
            let refused = APIError.invalidRequest(.init(reason: .other(Self.refusal(of: url, origin: origin)), method: HTTPMethod.get.rawValue))
            let page = state.withLock { $0.finish(load, with: .failure(refused), answered: []) }
            return Promise<Page<Element>>.Resolver(load.promise).resolve(page ?? .failure(APIError.cancelled))
        }
        let response: Promise<Response> = api.perform(
            route: route(for: load.cursor), parameters: parameters(for: load), options: request.options, decoding: .response
        )
        let resolver = Promise<Page<Element>>.Resolver(load.promise)
        resolver.onCancel { response.cancel() }
        response.register(Callback(queue: nil) { [self] result, _ in
            let outcome = result.flatMap { response in
                ResponseDecoding<[Element]>.decodable.value(of: response, parser: parser).mapError { $0 as any Error }.map {
                    (elements: $0, body: response.body, proposed: PageCursor(after: response, current: load.cursor, style: style, origin: origin), response: response)
                }
            }
            let answered = [result.success?.request.url, result.success?.url].compactMap { $0 }.map(PageCursor.url)
            let page = state.withLock { $0.finish(load, with: outcome, answered: answered) }
            resolver.resolve(page ?? .failure(APIError.cancelled))
        })
    }

    /// Why a next link to another origin is not followed, and what usually makes one.
    private static func refusal(of url: URL, origin: Origin?) -> String {
        "the next page's link \(describe(url)) leads to another origin than the first page's"
            + "\(origin.map { " (\($0.scheme)://\($0.host):\($0.port))" } ?? ""), and is not followed: it would carry this API's credentials there. "
            + "If it is the same server, spell the base URL's scheme, host and port as its links do (localhost is not 127.0.0.1)."
    }

    private func route(for cursor: PageCursor) -> Route {
        guard case .url(let url) = cursor else { return request.route(in: api) }
        return Route(method: .get, url: url.absoluteString)
    }

    /// The first request's parameters, with the page's number or cursor and the search added to
    /// the query; a link is followed as given, with only the first request's headers.
    private func parameters(for load: PaginationState<Element>.Load) -> any RequestParameters {
        var query = load.search.filters
        if let text = load.search.query { query[queryParameter] = text }
        switch (style.kind, load.cursor) {
        case (_, .url):
            return PageParameters(base: nil, query: [:], headers: request.parameters?.headers ?? [:])
        case (.number(let parameter, _), _):
            query[parameter] = style.number(of: load.cursor)
        case (.cursor(let parameter, _), .token(let token)):
            query[parameter] = token
        default:
            break
        }
        return PageParameters(base: request.parameters, query: query, headers: request.parameters?.headers ?? [:])
    }
}

/// A page's parameters: the first request's, then the page's own query items.
private struct PageParameters: RequestParameters {
    let base: (any RequestParameters)?
    let query: [String: any Sendable]
    let headers: HTTPHeaders

    func encode(into draft: inout RequestDraft) throws {
        try base?.encode(into: &draft)
        try URLParameters(query).encode(into: &draft)
    }
}

extension Result {
    /// The value, if this is a success.
    fileprivate var success: Success? {
        guard case .success(let value) = self else { return nil }
        return value
    }
}
