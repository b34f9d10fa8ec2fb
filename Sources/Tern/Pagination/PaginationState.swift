import Foundation

/// What a ``Paginator`` knows, and the rules for changing it: one load at a time, stale loads
/// ignored, pagination ending where a server would make it loop. Plain state, tested without I/O.
struct PaginationState<Element: Sendable>: Sendable {
    /// The elements of every page so far, in order.
    private(set) var elements: [Element] = []
    /// What to load next; `nil` once there is nothing more.
    private(set) var next: PageCursor? = .first
    /// The load in flight, if any.
    private(set) var load: Load?
    /// The error of the last load, cleared by the next success or by starting over.
    private(set) var lastError: (any Error)?
    /// What narrows the pages: sent with each page's request.
    private(set) var search = Search()
    /// Cursors and URLs already requested, so that a server repeating one ends pagination.
    private var followed: Set<PageCursor> = []
    /// The last page's body: a server that answers every page with the same one is not paginating.
    private var lastBody: Data?
    private var pageCount = 0
    /// Bumped on every start over, so that a load from before it is ignored.
    private var generation = 0
    /// How many loads have begun.
    private var loadCount = 0

    /// A query and filters.
    struct Search: Sendable {
        var query: String?
        var filters: [String: any Sendable] = [:]
    }

    /// A page being loaded.
    struct Load: Sendable {
        /// Tells this load from any other, so that only the load in flight can finish.
        let number: Int
        let generation: Int
        let index: Int
        /// The page's number as the server knows it, for numbered pages.
        let pageNumber: Int?
        let cursor: PageCursor
        let search: Search
        /// Settles with the page; every caller gets a promise that follows it.
        let promise: Promise<Page<Element>>
    }

    /// What a call to load the next page does.
    enum Start: Sendable {
        /// Waits for the load already running.
        case join(Promise<Page<Element>>)
        /// Answers at once: there is no next page.
        case exhausted(index: Int)
        /// Runs this new load.
        case begin(Load)
    }

    /// Whether the load in flight, if any, is for the first page.
    var isLoadingFirstPage: Bool { load?.index == 0 }

    /// Joins the load in flight, or begins one with the promise `makePromise` returns. A load
    /// whose every caller cancelled is not joined: it is on its way out, and another begins.
    /// `pageNumber` says what number, if any, the server knows a page by.
    mutating func start(pageNumber: (PageCursor) -> Int? = { _ in nil }, _ makePromise: () -> Promise<Page<Element>>) -> Start {
        if let load, load.promise.isPending { return .join(load.promise) }
        guard let next else { return .exhausted(index: pageCount) }
        loadCount += 1
        let load = Load(number: loadCount, generation: generation, index: pageCount, pageNumber: pageNumber(next), cursor: next,
                        search: search, promise: makePromise())
        self.load = load
        return .begin(load)
    }

    /// Records how `load` ended, and returns the page it made; `nil` when the load was stale
    /// (started before a start over, or replaced after its callers cancelled) and changed nothing.
    ///
    /// `answered` holds what the page was requested as (its URL before and after redirects),
    /// `proposed` what the page says comes next.
    mutating func finish(
        _ load: Load, with outcome: Result<(elements: [Element], body: Data, proposed: PageCursor?, response: Response), any Error>,
        answered: [PageCursor]
    ) -> Result<Page<Element>, any Error>? {
        guard load.generation == generation, self.load?.number == load.number else { return nil }
        self.load = nil
        switch outcome {
        case .failure(let error):
            if !Promise<Page<Element>>.isCancellation(error) { lastError = error }
            return .failure(error)
        case .success(let page):
            followed.insert(load.cursor)
            followed.formUnion(answered)
            let repeated = page.body == lastBody
            let proposed = page.proposed.flatMap { followed.contains($0) ? nil : $0 }
            next = page.elements.isEmpty || repeated ? nil : proposed
            lastBody = page.body
            lastError = nil
            pageCount += 1
            let fresh = repeated ? [] : page.elements
            elements += fresh
            return .success(Page(elements: fresh, position: load.index, number: load.pageNumber, hasNext: next != nil, response: page.response))
        }
    }

    /// Forgets every page and sets the search to `search`; returns the load to cancel, if any.
    mutating func startOver(with search: Search? = nil) -> Load? {
        let stale = load
        self = PaginationState(search: search ?? self.search, generation: generation + 1, loadCount: loadCount)
        return stale
    }

    private init(search: Search, generation: Int, loadCount: Int) {
        self.search = search
        self.generation = generation
        self.loadCount = loadCount
    }

    /// A paginator's state before its first page.
    init() {}
}
