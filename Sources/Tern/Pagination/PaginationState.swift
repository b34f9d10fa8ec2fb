import Foundation

/// What a ``Paginator`` knows, and the rules for changing it: one load at a time, stale loads
/// ignored, pagination ending where a server would make it loop. Plain state, tested without I/O.
///
/// What it keeps of each page is a few bytes (digests of its body and of where it was), unless
/// it keeps the elements, so that a loop over a feed of any length holds no page it has read.
struct PaginationState<Element: Sendable>: Sendable {
    /// Whether ``elements`` gathers every page's: not for an async sequence's pages, which its
    /// loop keeps or drops.
    let keepsElements: Bool
    /// The elements of every page so far, in order, when it keeps them.
    private(set) var elements: [Element] = []
    /// What to load next; `nil` once there is nothing more.
    private(set) var next: PageCursor? = .first
    /// The load in flight, if any.
    private(set) var load: Load?
    /// The error of the last load, cleared by the next success or by starting over.
    private(set) var lastError: (any Error)?
    /// What narrows the pages: sent with each page's request.
    private(set) var search = Search()
    /// Digests of the cursors and URLs already requested, so that a server repeating one ends
    /// pagination. (A cursor can be as large as a body: only its digest is kept.)
    private var followed: Set<Int> = []
    /// Digests of the bodies so far: a server that answers a page with one it gave before (the
    /// same page whatever the number, or two in turn) is not paginating.
    private var bodies: Set<Int> = []
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
            followed.insert(load.cursor.hashValue)
            followed.formUnion(answered.map(\.hashValue))
            let repeated = !bodies.insert(page.body.digest).inserted
            let proposed = page.proposed.flatMap { followed.contains($0.hashValue) ? nil : $0 }
            next = page.elements.isEmpty || repeated ? nil : proposed
            lastError = nil
            pageCount += 1
            let fresh = repeated ? [] : page.elements
            if keepsElements { elements += fresh }
            return .success(Page(elements: fresh, position: load.index, number: load.pageNumber, hasNext: next != nil, response: page.response))
        }
    }

    /// Forgets every page and sets the search to `search`; returns the load to cancel, if any.
    mutating func startOver(with search: Search? = nil) -> Load? {
        let stale = load
        self = PaginationState(keepsElements: keepsElements, search: search ?? self.search, generation: generation + 1, loadCount: loadCount)
        return stale
    }

    private init(keepsElements: Bool, search: Search, generation: Int, loadCount: Int) {
        self.keepsElements = keepsElements
        self.search = search
        self.generation = generation
        self.loadCount = loadCount
    }

    /// A paginator's state before its first page; gathering every page's elements when
    /// `keepsElements`.
    init(keepsElements: Bool = true) {
        self.keepsElements = keepsElements
    }
}

private extension Data {
    /// A digest of every byte, seeded anew in each process, so that no server can aim at it:
    /// two bodies alike in it by chance are about one in 2⁶⁴.
    var digest: Int {
        var hasher = Hasher()
        hasher.combine(count)
        withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }
}
