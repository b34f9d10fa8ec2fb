import Foundation

/// What a paginator asks for next.
enum PageCursor: Sendable, Hashable {
    /// The first page, as the request describes it.
    case first
    /// A numbered page.
    case number(Int)
    /// The page after a cursor or token.
    case token(String)
    /// A page's URL, from a `Link` header.
    case url(URL)
    /// A next link to another origin than the first page's: loading it fails, since its request
    /// would carry this API's credentials to a host a response named.
    case elsewhere(URL)

    /// What follows the page that `response` answered, in `style`; `nil` when nothing does.
    /// A next link to another origin than `origin`, the first page's, is ``elsewhere(_:)``.
    init?(after response: Response, current: PageCursor, style: PageStyle, origin: Origin?) {
        switch style.kind {
        case .number(_, let first):
            guard case .number(let number) = current else { self = .number(first + 1); return }
            self = .number(number + 1)
        case .cursor(_, let source):
            guard let token = source.cursor(in: response) else { return nil }
            self = .token(token)
        case .link:
            guard let url = response.link(rel: "next") else { return nil }
            self = Origin(url) == origin ? .url(url) : .elsewhere(url)
        }
    }
}
