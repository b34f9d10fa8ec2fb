/// A short list kept in registration order, with no allocation for the common single element:
/// a promise's callbacks, and its producer's cancellation handlers.
@usableFromInline
enum InlineList<Element: Sendable>: Sendable {
    case none
    case one(Element)
    case many([Element])

    @inlinable
    var isEmpty: Bool {
        if case .none = self { true } else { false }
    }

    @inlinable
    var count: Int {
        switch self {
        case .none: 0
        case .one: 1
        case .many(let all): all.count
        }
    }

    @inlinable
    mutating func append(_ element: Element) {
        switch self {
        case .none: self = .one(element)
        case .one(let first): self = .many([first, element])
        case .many(var all):
            self = .none  // keeps `all` uniquely referenced, so the append does not copy
            all.append(element)
            self = .many(all)
        }
    }

    @inlinable
    func forEach(_ body: (Element) -> Void) {
        switch self {
        case .none: break
        case .one(let element): body(element)
        case .many(let all): all.forEach(body)
        }
    }
}
