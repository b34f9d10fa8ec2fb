/// One page of a collection, as ``AbstractAPI/pages(_:style:collectionKeyPath:)`` loads it.
public struct Page<Element: Sendable>: Sendable {
    /// The page's elements.
    public let elements: [Element]
    /// The page's place among those loaded: 0 for the first, whatever the server numbers it.
    public let position: Int
    /// The number the server knows the page by, the one sent in the query, for
    /// ``PageStyle/pageNumber(parameter:first:)``; `nil` for cursors, links and the empty page
    /// that answers a load after the last.
    public let number: Int?
    /// Whether another page follows.
    package let hasNext: Bool
    /// The response the page came in; `nil` for the empty page that answers a load after the last.
    public let response: Response?

    /// Creates a page.
    package init(elements: [Element], position: Int, number: Int? = nil, hasNext: Bool, response: Response?) {
        self.elements = elements
        self.position = position
        self.number = number
        self.hasNext = hasNext
        self.response = response
    }
}
