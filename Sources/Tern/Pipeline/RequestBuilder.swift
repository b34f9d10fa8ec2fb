import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 1 of the pipeline: a route and its parameters become a request ready for the wire.
///
/// Headers merge in this order, the later winning: the parser's `Accept`, the configuration's
/// common headers and the request's own (``RequestOptions``' `headers`), what the encoder sets
/// (its `Content-Type`), then the parameters' own headers. (The delegate comes after, in the
/// next stage.)
enum RequestBuilder {
    /// `urlIsChecked` when the route's URL is known to have an HTTP scheme in lowercase and a host
    /// (``BaseURL``). `resolvedFields` are `acceptHeader` and `commonHeaders` as header fields,
    /// checked once already (``RequestContext/resolvedFields``): a request without parameters
    /// sends them as they are.
    static func build(
        route: Route,
        urlIsChecked: Bool,
        parameters: (any RequestParameters)?,
        timeout: TimeInterval,
        cachePolicy: URLRequest.CachePolicy,
        commonHeaders: HTTPHeaders,
        acceptHeader: String?,
        resolvedFields: [String: String]?,
        maximumBodySize: Int?,
        isCancelled: @escaping @Sendable () -> Bool
    ) throws -> (request: TransportRequest, temporaryFile: URL?) {
        let checked = urlIsChecked ? route.url
            : AbsoluteURL.hasSchemeAndHost(route.url) && AbsoluteURL.hasHTTPScheme(route.url) ? AbsoluteURL.lowercasingScheme(route.url) : nil
        guard let checked, let url = URL(string: checked) else {
            throw APIError.invalidRequest(.init(reason: .invalidURL(route.url), method: route.method.rawValue))
        }
        if parameters == nil, let resolvedFields {
            try validate(method: route.method)
            let request = urlRequest(url, route.method, resolvedFields, timeout: timeout, cachePolicy: cachePolicy)
            return (TransportRequest(urlRequest: request, maximumBodySize: maximumBodySize), nil)
        }
        var headers: HTTPHeaders = [:]
        if let acceptHeader { headers["Accept"] = acceptHeader }
        headers.merge(commonHeaders)
        var draft = RequestDraft(method: route.method, url: url, headers: headers, endedCheck: isCancelled)
        if let parameters {
            try APIError.catching({ .encodingFailed(.init(parameter: String(describing: type(of: parameters)), underlying: $0)) }) {
                try parameters.encode(into: &draft)
            }
            draft.headers.merge(parameters.headers)
        }
        try validate(method: draft.method, headers: draft.headers)
        var request = urlRequest(draft.url, draft.method, draft.headers.dictionary, timeout: timeout, cachePolicy: cachePolicy)
        switch draft.body {
        case .none:
            return (TransportRequest(urlRequest: request, maximumBodySize: maximumBodySize), nil)
        case .data(let data):
            request.httpBody = data
            return (TransportRequest(urlRequest: request, maximumBodySize: maximumBodySize), nil)
        case .file(let file, let isTemporary):
            return (TransportRequest(urlRequest: request, body: .file(file), maximumBodySize: maximumBodySize), isTemporary ? file : nil)
        case .stream(let stream):
            return (TransportRequest(urlRequest: request, body: .stream(stream), maximumBodySize: maximumBodySize), nil)
        }
    }

    /// The request for `url` with `method` and the header `fields`, merged already.
    private static func urlRequest(_ url: URL, _ method: HTTPMethod, _ fields: [String: String],
                                   timeout: TimeInterval, cachePolicy: URLRequest.CachePolicy) -> URLRequest {
        // Tern enforces the timeout itself; URLSession's own (whole seconds on Linux) must never
        // fire first, and stays within what FoundationNetworking can count.
        let sessionTimeout = min(timeout.rounded(.up) + 1, maximumSessionTimeout)
        var request = URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: sessionTimeout)
        // Cookies are the API's jar's, added per stop of a redirect chain; the transport adds none.
        request.httpShouldHandleCookies = false
        // Each of these setters is costly on Linux (the method is compared case-insensitively with
        // six others; each header name is capitalized and compared with every header set so far),
        // so set only what differs from the default, and the headers, merged already, at once.
        if method != .get {
            request.httpMethod = method.rawValue
        }
        if !fields.isEmpty {
            request.allHTTPHeaderFields = fields
        }
        return request
    }

    /// Refuses a method that could inject other headers or requests.
    static func validate(method: HTTPMethod) throws(APIError) {
        guard method.rawValue.isHTTPToken else {
            throw .invalidRequest(.init(reason: .invalidMethod(method.rawValue)))
        }
    }

    /// URLSession's own timeout when Tern's is longer: a year, as good as never.
    static let maximumSessionTimeout: TimeInterval = 365 * 24 * 3600

    /// Refuses a method or headers that could inject other headers or requests, or frame the
    /// message differently from the body sent.
    static func validate(method: HTTPMethod, headers: HTTPHeaders) throws(APIError) {
        try validate(method: method)
        if let field = headers.firstInvalidField {
            throw .invalidRequest(.init(reason: .invalidHeader(name: field.name), method: method.rawValue))
        }
        if let field = headers.firstFramingField {
            throw .invalidRequest(.init(reason: .framingHeader(name: field.name), method: method.rawValue))
        }
        // libcurl writes a request's head in at most 1 MiB and fails a longer one before sending
        // it, as out of memory (URLSession on Linux too), which read as a response's fault, or as
        // the network's: an event source sending back a server's megabyte ID reconnected for good.
        let bytes = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        if bytes > mostHeaderBytes, let largest = headers.max(by: { $0.value.utf8.count < $1.value.utf8.count }) {
            throw .invalidRequest(.init(reason: .other("its header fields come to \(bytes) bytes (\(largest.name) alone \(largest.value.utf8.count)): "
                + "more than the 1 MiB in which libcurl writes a request's head, and far more than servers take (8 to 64 KiB); it was not sent"),
                method: method.rawValue))
        }
    }

    /// The most bytes of header fields a request may carry: libcurl's 1 MiB for a request's head,
    /// less room for its request line and the fields the transport adds.
    static let mostHeaderBytes = (1 << 20) - (64 << 10)
}
