import Foundation

/// How a server numbers its pages, and so how
/// ``AbstractAPI/pages(_:style:collectionKeyPath:)`` asks for the next one.
///
/// ```swift
/// .pageNumber()                                          // ?page=1, ?page=2, … until an empty page
/// .pageNumber(parameter: "p", first: 0)
/// .cursor(parameter: "after", from: .body("meta.next"))  // {"meta": {"next": "c2"}} → ?after=c2
/// .cursor(parameter: "pageToken", from: .header("X-Next-Page-Token"))
/// .linkHeader                                            // Link: <https://…?page=2>; rel="next"
/// ```
public struct PageStyle: Sendable {
    enum Kind: Sendable {
        case number(parameter: String, first: Int)
        case cursor(parameter: String, source: CursorSource)
        case link
    }

    let kind: Kind

    /// Numbered pages: the number goes in the query as `parameter`, from `first`, one more each
    /// time, until a page comes back empty (Opera's defaults: `page`, from 1).
    public static func pageNumber(parameter: String = "page", first: Int = 1) -> PageStyle {
        PageStyle(kind: .number(parameter: parameter, first: first))
    }

    /// A cursor or token read from each page, sent back in the query as `parameter` for the
    /// next; pagination ends when a page has none, or one already followed.
    public static func cursor(parameter: String = "cursor", from source: CursorSource) -> PageStyle {
        PageStyle(kind: .cursor(parameter: parameter, source: source))
    }

    /// The `next` link of each page's `Link` header (RFC 8288), followed as given; pagination
    /// ends on a page without one, or one already followed. A link to another origin than the
    /// first page's is not followed: loading it fails with ``APIError/invalidRequest(_:)``.
    public static var linkHeader: PageStyle { PageStyle(kind: .link) }

    /// The number a page asked for as `cursor` goes by on the server: numbered pages only.
    func number(of cursor: PageCursor) -> Int? {
        guard case .number(_, let first) = kind else { return nil }
        switch cursor {
        case .first: return first
        case .number(let number): return number
        case .token, .url, .elsewhere: return nil
        }
    }

    /// Where a page's cursor comes from.
    public enum CursorSource: Sendable {
        /// A string or number at a dot-separated key path of the JSON body, such as `"meta.next"`,
        /// each key named as the body writes it (`"next_cursor"`) or as `.convertFromSnakeCase`
        /// reads it (`"nextCursor"`), as a collection's key path is; `null`, an empty string or
        /// no such key means there is no next page.
        case body(String)
        /// A response header; absent or empty means there is no next page.
        case header(String)

        /// The cursor `response` carries, if any.
        func cursor(in response: Response) -> String? {
            let cursor = switch self {
            case .header(let name): response.headers[name]
            case .body(let keyPath): Self.value(at: keyPath, in: response.body)
            }
            return cursor?.isEmpty == false ? cursor : nil
        }

        private static func value(at keyPath: String, in body: Data) -> String? {
            var value = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
            for key in keyPath.split(separator: ".").map(String.init) {
                let members = value as? [String: Any]
                value = members?[key] ?? members?.first { SnakeCaseName.converted($0.key) == key }?.value
            }
            switch value {
            case let text as String: return text
            case let number as NSNumber where !number.isJSONBoolean: return number.stringValue
            default: return nil
            }
        }
    }
}
