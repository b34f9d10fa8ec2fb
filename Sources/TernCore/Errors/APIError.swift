import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything that can go wrong with a Tern request or promise, as one error type.
///
/// Each case carries what a developer needs to act: the status, the server's own error body,
/// the coding path, a snippet of the body; ``method`` and ``url`` name the request, whatever
/// the case, and ``statusCode`` and ``underlyingError`` say what answered, or what failed
/// beneath. `description` says it all in one readable paragraph.
///
/// ```swift
/// api.products(page: 1).onError { error in
///     switch error as? APIError {
///     case .cancelled?: break
///     case .unacceptableStatus(let failure)? where failure.statusCode == 404: showEmpty()
///     case .unacceptableStatus(let failure)?: show(failure.serverError(as: ShopError.self)?.message)
///     default: show("\(error)")
///     }
/// }
/// ```
///
/// Cancellation is always ``cancelled``: from ``Promise/cancel()``, from cancelling the Task
/// that awaits ``Promise/value``, and from a URL session that reports `URLError.cancelled`.
public enum APIError: Error, Sendable, CustomStringConvertible {
    /// The request could not be built: an invalid URL, a header that would inject another.
    case invalidRequest(InvalidRequest)
    /// Request parameters could not be encoded.
    case encodingFailed(EncodingFailure)
    /// The request did not get a response: the connection failed, was lost or refused.
    case transportFailed(TransportFailure)
    /// No answer within the time allowed: a request's timeout or ``Promise/timeout(_:clock:)``.
    case timeout(Timeout)
    /// The request or promise was cancelled.
    case cancelled
    /// The response body was larger than the request allows; the transfer was stopped.
    case responseTooLarge(ResponseTooLarge)
    /// A redirect could not be followed: too many, from https to http, or to no valid location.
    case redirectFailed(RedirectFailure)
    /// A download's file could not be written, or moved to its destination.
    case fileFailed(FileFailure)
    /// A host's pinned keys were not shown, or could not be checked; nothing was sent.
    case pinningFailed(PinningFailure)
    /// The server answered with a status the request does not accept.
    case unacceptableStatus(StatusFailure)
    /// The response body could not be turned into the expected value.
    case parsingFailed(ParsingFailure)
    /// The server refused the credentials and refreshing them did not help.
    case authentication(AuthenticationFailure)
    /// A promise was misused or could not settle; see ``PromiseFailure``.
    case promise(PromiseFailure)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .invalidRequest(let failure): "\(failure)"
        case .encodingFailed(let failure): "\(failure)"
        case .transportFailed(let failure): "\(failure)"
        case .timeout(let failure): "\(failure)"
        case .cancelled: "The request was cancelled."
        case .responseTooLarge(let failure): "\(failure)"
        case .redirectFailed(let failure): "\(failure)"
        case .fileFailed(let failure): "\(failure)"
        case .pinningFailed(let failure): "\(failure)"
        case .unacceptableStatus(let failure): "\(failure)"
        case .parsingFailed(let failure): "\(failure)"
        case .authentication(let failure): "\(failure)"
        case .promise(let failure): "\(failure)"
        }
    }

    /// Whether this is ``cancelled``: cancellation is usually not worth showing to a user.
    public var isCancellation: Bool {
        if case .cancelled = self { true } else { false }
    }

    /// The method of the request that failed; `nil` when the error concerns no one request (a
    /// promise's, a refresh's) or its reason does not record it.
    public var method: String? { request.method }

    /// The URL of the request that failed (the last one, after redirects); `nil` when the error
    /// concerns no one request or its reason does not record it.
    public var url: URL? { request.url }

    /// The status of the response the request got, when it got one: the status refused, the
    /// redirect's, or that of a response whose body did not parse, was too large or did not
    /// finish arriving; the status refused again after a refresh.
    public var statusCode: Int? {
        switch self {
        case .transportFailed(let failure): failure.statusCode
        case .responseTooLarge(let failure): failure.statusCode
        case .redirectFailed(let failure): failure.statusCode
        case .unacceptableStatus(let failure): failure.statusCode
        case .parsingFailed(let failure): failure.statusCode
        case .authentication(.stillUnauthorized(let statusCode)): statusCode
        case .invalidRequest, .encodingFailed, .timeout, .cancelled, .fileFailed, .pinningFailed, .authentication, .promise: nil
        }
    }

    /// The error another layer reported, when this one wraps it: the encoder's, the
    /// transport's (a `URLError` from URLSession), the file system's, the decoder's, or the
    /// delegate's failed refresh.
    public var underlyingError: (any Error)? {
        switch self {
        case .encodingFailed(let failure): failure.underlying
        case .transportFailed(let failure): failure.underlying
        case .fileFailed(let failure): failure.underlying
        case .parsingFailed(let failure): failure.underlying
        case .authentication(.refreshFailed(let error)): error
        case .invalidRequest, .timeout, .cancelled, .responseTooLarge, .redirectFailed, .pinningFailed, .unacceptableStatus,
             .authentication, .promise: nil
        }
    }

    /// The failed request's method and URL, as its reason records them.
    private var request: (method: String?, url: URL?) {
        switch self {
        case .invalidRequest(let failure): (failure.method, nil)
        case .transportFailed(let failure): (failure.method, failure.url)
        case .timeout(let failure): (failure.method, failure.url)
        case .responseTooLarge(let failure): (failure.method, failure.url)
        case .redirectFailed(let failure): (failure.method, failure.url)
        case .pinningFailed(let failure): (failure.method, failure.url)
        case .unacceptableStatus(let failure): (failure.method, failure.url)
        case .parsingFailed(let failure): (failure.method, failure.url)
        case .encodingFailed, .cancelled, .fileFailed, .authentication, .promise: (nil, nil)
        }
    }
}

extension APIError {
    /// `error` as it is when it is an `APIError` already, else what `wrap` makes of it: Tern's
    /// own errors pass through every stage unchanged.
    @usableFromInline
    package static func wrapping(_ error: any Error, _ wrap: (any Error) -> APIError) -> APIError {
        error as? APIError ?? wrap(error)
    }

    /// Runs `body`; what it throws comes out through ``wrapping(_:_:)``.
    package static func catching<T>(_ wrap: (any Error) -> APIError, _ body: () throws -> T) throws(APIError) -> T {
        do {
            return try body()
        } catch {
            throw wrapping(error, wrap)
        }
    }
}

/// How a request and its response are named in error messages: method and URL, each cut to a
/// readable length (a 10 MB query must not make a 10 MB message).
package func describe(_ method: String?, _ url: URL?) -> String {
    [method.map { quoted($0, limit: 64) }, url.map(describe)].compactMap { $0 }.joined(separator: " ")
}

/// A URL for an error message: bounded, and with any password in it hidden, since messages end
/// up in logs and crash reports.
package func describe(_ url: URL) -> String {
    guard url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
        return bounded(url.absoluteString)
    }
    components.password = "***"
    return bounded(components.string ?? url.absoluteString)
}

/// A URL as a server wrote it (a `Location`, which need not parse), for an error message: its
/// password, between the user and the host, hidden.
func hidingPassword(in url: String) -> String {
    guard let slashes = url.range(of: "//") else { return url }
    let authorityEnd = url[slashes.upperBound...].firstIndex { "/?#".contains($0) } ?? url.endIndex
    guard let at = url[slashes.upperBound..<authorityEnd].lastIndex(of: "@"),
          let colon = url[slashes.upperBound..<at].firstIndex(of: ":") else { return url }
    return url[..<url.index(after: colon)] + "***" + url[at...]
}

/// Text for an error message, cut to `limit` characters.
func bounded(_ text: String, limit: Int = APIError.textLimit) -> String {
    guard text.utf8.count > limit else { return text }
    return text.prefix(limit) + "… (\(text.utf8.count) bytes in all)"
}

/// Text a caller gave (a header name, a method), for an error message between quotes: control
/// characters escaped, so that the message shows what was wrong with it; cut to `limit`.
func quoted(_ text: String, limit: Int = APIError.textLimit) -> String {
    var shown = String(text.prefix(limit).debugDescription.dropFirst().dropLast())
    if text.utf8.count > limit && text.count > limit { shown += "… (\(text.utf8.count) bytes in all)" }
    return shown
}

/// The first bytes of a body, as text when they are text, for error messages.
func snippet(of body: Data, limit: Int = APIError.snippetLength) -> String {
    guard !body.isEmpty else { return "(empty)" }
    let prefix = body.prefix(limit)
    let text = String(decoding: prefix, as: UTF8.self)
    let suffix = body.count > limit ? "… (\(body.count) bytes in all)" : ""
    return text + suffix
}

extension APIError {
    /// How many bytes of a body errors keep and show.
    package static let snippetLength = 512
    /// How many characters of a URL or other text from the request an error's description shows.
    package static let textLimit = 1024
}
