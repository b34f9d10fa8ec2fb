/// The pages of a collection, each requested only when the loop asks for it: what
/// ``AbstractAPI/pages(_:style:collectionKeyPath:)`` returns as a ``ResponseSequence``.
struct PageSequence<Element: Decodable & Sendable>: AsyncSequence, Sendable {
    let makePaginator: @Sendable () -> Paginator<Element>

    /// Starts a new pagination: each iteration begins at the first page.
    func makeAsyncIterator() -> Iterator {
        Iterator(paginator: makePaginator())
    }

    /// Loads one page per call to ``next()``.
    struct Iterator: AsyncIteratorProtocol {
        /// The paginator behind this iteration, which keeps none of the pages it loaded.
        let paginator: Paginator<Element>

        /// The next page, or `nil` after the last; an empty last page is not returned.
        ///
        /// - Throws: The page's ``APIError``; ``APIError/cancelled`` when the Task is cancelled.
        mutating func next() async throws -> Page<Element>? {
            guard paginator.hasNextPage else { return nil }
            guard !Task.isCancelled else { throw APIError.cancelled }
            let page = try await paginator.loadNextPage().value
            return page.elements.isEmpty && !page.hasNext ? nil : page
        }
    }
}

extension AbstractAPI {
    /// The pages `request` starts, as an async sequence: each iteration begins at the first page
    /// and requests the next only when the loop asks for it; cancelling the Task cancels the
    /// request in flight.
    ///
    /// ```swift
    /// for try await page in api.pages(APIRequest<[Product]>(.get("/products")), style: .linkHeader) {
    ///     show(page.elements)
    /// }
    /// ```
    ///
    /// Each page goes through the API's whole pipeline (delegate, refresh, retries, plugins) and
    /// is decoded by its parser; a search or filters are `request`'s parameters, sent with every
    /// page. Pagination ends on a page without a next page, an empty page, a next URL or cursor
    /// already followed, or a page identical to one before. A next link to another origin than
    /// the first page's is not followed (the API would sign it with its credentials): the loop
    /// throws ``APIError/invalidRequest(_:)`` there. The sequence keeps no page it has handed to
    /// the loop.
    ///
    /// - Parameters:
    ///   - request: The first page's request; its value type names the elements.
    ///   - style: Page numbers (the default, `page` from 1), cursors, or `Link` headers.
    ///   - collectionKeyPath: Dot-separated keys to the elements inside the body, such as
    ///     `"data.items"`; `nil` when the body is the array.
    public func pages<Element: Decodable & Sendable>(
        _ request: APIRequest<[Element]>,
        style: PageStyle = .pageNumber(),
        collectionKeyPath: String? = nil
    ) -> ResponseSequence<Page<Element>> {
        ResponseSequence(PageSequence {
            Paginator(api: self, request: request, style: style, collectionKeyPath: collectionKeyPath, keepsElements: false)
        })
    }
}
