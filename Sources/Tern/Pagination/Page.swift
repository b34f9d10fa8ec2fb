/// One page a ``Paginator`` loaded.
public struct Page<Element: Sendable>: Sendable {
    /// The page's elements.
    public let elements: [Element]
    /// The page's place in the pagination, from 0.
    public let index: Int
    /// Whether another page follows.
    public let hasNext: Bool
    /// The response the page came in; `nil` for the empty page that answers a load after the last.
    public let response: Response?

    /// Creates a page.
    public init(elements: [Element], index: Int, hasNext: Bool, response: Response?) {
        self.elements = elements
        self.index = index
        self.hasNext = hasNext
        self.response = response
    }
}
