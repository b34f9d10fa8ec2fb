/// The pages of a collection as an async sequence, each requested only when the loop asks for
/// it; cancelling the Task cancels the request in flight.
///
/// ```swift
/// for try await page in api.pages(APIRequest<[Product]>(.get("/products")), style: .linkHeader) {
///     show(page.elements)
/// }
/// ```
public struct PageSequence<Element: Decodable & Sendable>: AsyncSequence, Sendable {
    let makePaginator: @Sendable () -> Paginator<Element>

    /// Starts a new pagination: each iteration begins at the first page.
    public func makeAsyncIterator() -> Iterator {
        Iterator(paginator: makePaginator())
    }

    /// Loads one page per call to ``next()``.
    public struct Iterator: AsyncIteratorProtocol {
        /// The paginator behind this iteration, with everything loaded so far.
        package let paginator: Paginator<Element>

        /// The next page, or `nil` after the last; an empty last page is not returned.
        ///
        /// - Throws: The page's ``APIError``; ``APIError/cancelled`` when the Task is cancelled.
        public mutating func next() async throws -> Page<Element>? {
            guard paginator.hasNextPage else { return nil }
            guard !Task.isCancelled else { throw APIError.cancelled }
            let page = try await paginator.loadNextPage().value
            return page.elements.isEmpty && !page.hasNext ? nil : page
        }
    }
}

extension AbstractAPI {
    /// The pages `request` starts, as an async sequence; see ``Paginator`` for the styles and
    /// when pagination ends.
    public func pages<Element>(
        _ request: APIRequest<[Element]>,
        style: PageStyle = .pageNumber(),
        collectionKeyPath: String? = nil
    ) -> PageSequence<Element> {
        PageSequence { Paginator(api: self, request: request, style: style, collectionKeyPath: collectionKeyPath) }
    }
}
