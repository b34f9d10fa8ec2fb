import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response's status and header fields, as they arrived: what Tern reads of every response.
///
/// Foundation's `HTTPURLResponse` for it is made whole only when something asks for it (a
/// response's `httpResponse`): on Linux, making one costs a tenth of a request to a server on the same
/// machine (it capitalises and compares each field's name through `NSString`), and most
/// requests never need it.
public final class ResponseHead: Sendable {
    /// The URL that answered.
    public let url: URL?
    /// The status code.
    public let statusCode: Int
    /// The protocol of the status line (`HTTP/1.1`, `HTTP/2`), when the transport read it.
    public let httpVersion: String?
    /// The fields, in the order they arrived where the transport keeps it; repeated ones
    /// joined with commas, as URLSession joins them.
    public let headers: HTTPHeaders
    /// Each `Set-Cookie` field's value on its own, in order, when the transport read the fields
    /// one by one (libcurl, the cache); `nil` when it had them joined with commas (URLSession),
    /// where two fields cannot be told from one whose value holds a comma.
    package let setCookies: [String]?
    /// Foundation's response, made whole when first asked for; until then one holding its place.
    private let made: Locked<(response: HTTPURLResponse, isWhole: Bool)>

    /// A head from its parts; `nil` when Foundation cannot make a response of them.
    public convenience init?(url: URL, statusCode: Int, httpVersion: String?, headers: HTTPHeaders) {
        self.init(url: url, statusCode: statusCode, httpVersion: httpVersion, headers: headers, setCookies: nil)
    }

    /// A head from its parts and its `Set-Cookie` fields' values, each on its own (see
    /// ``setCookies``).
    package init?(url: URL, statusCode: Int, httpVersion: String?, headers: HTTPHeaders, setCookies: [String]?) {
        #if canImport(Darwin)
        // Apple's initializer may refuse the parts, and the head is refused with them. Without
        // fields it is twenty times cheaper.
        guard let placeHolder = HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: nil) else { return nil }
        let isWhole = headers.isEmpty
        #else
        // FoundationNetworking's never refuses, and even without fields reads the URL's last
        // path component, a cost the loop's profile shows: nothing is made until something
        // asks, a response shared by every head holding its place.
        guard let placeHolder = Self.placeHolder else { return nil }
        let isWhole = false
        #endif
        self.url = url
        self.statusCode = statusCode
        self.httpVersion = httpVersion
        self.headers = headers
        self.setCookies = setCookies
        made = Locked((placeHolder, isWhole))
    }

    #if !canImport(Darwin)
    /// What holds the place of a head's response until it is made.
    private static let placeHolder = HTTPURLResponse(url: URL(fileURLWithPath: "/"), statusCode: 200, httpVersion: nil, headerFields: nil)
    #endif

    /// The head of a response Foundation made (URLSession's, a stub's).
    package init(_ response: HTTPURLResponse) {
        url = response.url
        statusCode = response.statusCode
        httpVersion = nil
        setCookies = nil
        headers = HTTPHeaders(response.allHeaderFields.compactMap { name, value in
            (name as? String).map { ($0, "\(value)") }
        }.sorted { $0.0 < $1.0 })
        made = Locked((response, true))
    }

    /// Foundation's response for this head, made whole the first time it is asked for.
    package var urlResponse: HTTPURLResponse {
        made.withLock { made in
            guard !made.isWhole else { return made.response }
            // FoundationNetworking's initializer never fails; were Foundation's ever to refuse
            // the fields, the response is made without them, and is not made again.
            let whole = url.flatMap {
                HTTPURLResponse(url: $0, statusCode: statusCode, httpVersion: httpVersion, headerFields: headers.dictionary)
                    ?? HTTPURLResponse(url: $0, statusCode: statusCode, httpVersion: httpVersion, headerFields: nil)
            }
            made = (whole ?? made.response, true)
            return made.response
        }
    }

    /// The length the `Content-Length` field announces; `nil` when there is none or it is no
    /// number.
    package var contentLength: Int64? {
        headers["Content-Length"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }
}

extension ResponseHead {
    /// Whether an answer of `statusCode` to a request of `method` has no body, whatever length
    /// it states (RFC 9110, §6.4.1): it answers a `HEAD`, or is a `1xx`, `204` or `304`.
    package static func hasNoBody(statusCode: Int, method: String?) -> Bool {
        method?.uppercased() == "HEAD" || (100..<200).contains(statusCode) || statusCode == 204 || statusCode == 304
    }
}
