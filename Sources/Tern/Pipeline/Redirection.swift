import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RedirectPolicy {
    /// The statuses that redirect, when they come with a `Location`.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Headers that describe a body, dropped with it when a redirect turns the request into a GET.
    private static let bodyHeaders = ["Content-Type", "Content-Encoding", "Content-Language", "Content-Location"]

    /// Whether `head` is a redirect this policy follows whatever its body: one with a
    /// `Location`, under a policy that follows and leaves no decision to the app (which may
    /// keep the redirect as the answer, body and all).
    func followsAtItsHead(_ head: ResponseHead) -> Bool {
        follows && decide == nil && Self.redirectStatuses.contains(head.statusCode) && head.headers["Location"] != nil
    }

    /// The next stop after `response`, the answer to `leg`'s request as `sent`; `nil` when the
    /// response is not a redirect to follow and so is the response. Throws when the redirect
    /// must not be followed and cannot be the response either: too many, to http from https,
    /// or to a location that is no http(s) URL.
    func next(after response: ResponseHead, to sent: URLRequest, from leg: Leg) throws(APIError) -> Leg? {
        guard follows, Self.redirectStatuses.contains(response.statusCode),
              let location = response.headers["Location"] else { return nil }
        func failure(_ reason: APIError.RedirectFailure.Reason) -> APIError {
            .redirectFailed(.init(reason: reason, method: sent.httpMethod, url: sent.url, statusCode: response.statusCode, location: location))
        }
        guard let base = sent.url,
              let resolved = URL(string: location, relativeTo: base)?.absoluteURL,
              let target = Self.lowercasingScheme(resolved),
              let scheme = target.scheme, scheme == "http" || scheme == "https", target.host != nil else {
            throw failure(.invalidLocation)
        }
        guard leg.redirects < maximumRedirects else { throw failure(.tooManyRedirects(limit: maximumRedirects)) }
        if scheme == "http", base.scheme?.lowercased() == "https", !allowsInsecureRedirects {
            throw failure(.insecureRedirect)
        }
        var next = leg
        next.redirects += 1
        next.hasLeftOrigin = leg.hasLeftOrigin || Origin(target) != leg.origin
        let redirect = Redirect(request: sent, response: response.urlResponse, target: target, number: next.redirects, isCrossOrigin: next.hasLeftOrigin)
        if let decide, decide(redirect) == .doNotFollow { return nil }

        var request = leg.request.urlRequest
        request.url = next.hasLeftOrigin ? target : leg.withFirstURLsUserInfo(target)
        if Self.becomesGet(status: response.statusCode, method: request.httpMethod ?? "GET") {
            request.httpMethod = HTTPMethod.get.rawValue
            request.httpBody = nil
            request.httpBodyStream = nil
            next.request.body = .inRequest
            for name in Self.bodyHeaders { request.setValue(nil, forHTTPHeaderField: name) }
        }
        next.removeCredentials(from: &request, policy: self)
        next.request.urlRequest = request
        return next
    }

    /// `url` with its scheme in lowercase, which every transport takes (`HTTP://` is the same URL).
    private static func lowercasingScheme(_ url: URL) -> URL? {
        let string = url.absoluteString
        let lowered = AbsoluteURL.lowercasingScheme(string)
        return lowered == string ? url : URL(string: lowered)
    }

    /// Whether a redirect with `status` continues as a GET: 303 always (but HEAD stays HEAD),
    /// and 301 and 302 after a POST, as browsers, curl and URLSession all do; 307 and 308
    /// never change the method.
    private static func becomesGet(status: Int, method: String) -> Bool {
        switch status {
        case 303: method != HTTPMethod.head.rawValue && method != HTTPMethod.get.rawValue
        case 301, 302: method == HTTPMethod.post.rawValue
        default: false
        }
    }
}
