import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension APIError {
    /// Why a request could not be built.
    public struct InvalidRequest: Sendable, CustomStringConvertible {
        /// What was wrong.
        public enum Reason: Sendable, Equatable {
            /// The string is not a valid URL, or is a relative one with no base URL to join it to.
            case invalidURL(String)
            /// A header name or value contains a line break or another character HTTP forbids,
            /// which would let it inject headers or requests.
            case invalidHeader(name: String)
            /// The method is not an HTTP token: a space or a line break in it would put another
            /// request on the wire.
            case invalidMethod(String)
            /// A header that frames the message (`Content-Length`, `Transfer-Encoding`,
            /// `Connection`, `Host`, …) was set by hand: the transport sets those from the body.
            case framingHeader(name: String)
            /// A header of a multipart part has a name or value HTTP forbids.
            case invalidPartHeader(part: String, name: String)
            /// The timeout is zero, negative or not a number; `.infinity` means none.
            case invalidTimeout(TimeInterval)
            /// Something else, in words.
            case other(String)
        }

        /// What was wrong.
        public let reason: Reason
        /// The request's method, when known.
        package let method: String?

        /// Creates the reason.
        package init(reason: Reason, method: String? = nil) {
            self.reason = reason
            self.method = method
        }

        /// What went wrong, in words.
        public var description: String {
            switch reason {
            case .invalidURL(let string) where !AbsoluteURL.hasScheme(string):
                "Invalid request: \"\(quoted(string))\" is a relative URL, and the API has no base URL to join it to "
                    + "(set APIConfiguration.baseURL)\(method.map { " (for \(quoted($0, limit: 64)))" } ?? "")."
            case .invalidURL(let string):
                "Invalid request: \"\(quoted(string))\" is not a valid URL\(method.map { " (for \(quoted($0, limit: 64)))" } ?? "")."
            case .invalidHeader(let name):
                "Invalid request: the header \"\(quoted(name))\" has a name or value "
                    + "with a line break or another character HTTP forbids; it was not sent."
            case .invalidMethod(let method):
                "Invalid request: the method \"\(quoted(method))\" is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~); it was not sent."
            case .framingHeader(let name):
                "Invalid request: the header \"\(quoted(name))\" frames the message, so the transport sets it from the body "
                    + "it sends; set by hand it could desynchronise the connection. It was not sent."
            case .invalidPartHeader(let part, let name):
                "Invalid request: the header \"\(quoted(name))\" of the multipart part \"\(quoted(part))\" has a name or value "
                    + "with a line break or another character HTTP forbids; it was not sent."
            case .invalidTimeout(let interval):
                "Invalid request: the timeout \(interval) s is not a positive number of seconds (use .infinity for none); it was not sent."
            case .other(let text):
                "Invalid request: \(text)"
            }
        }
    }

    /// Why request parameters could not be encoded.
    public struct EncodingFailure: Sendable, CustomStringConvertible {
        /// The parameter (or parameter type) that failed, such as `tags[2]` or `JSONParameters<Product>`.
        package let parameter: String
        /// The encoder's own error.
        package let underlying: any Error

        /// Creates the failure.
        package init(parameter: String, underlying: any Error) {
            self.parameter = parameter
            self.underlying = underlying
        }

        /// What went wrong, in words.
        public var description: String {
            "Could not encode the parameter \(bounded(parameter)): \(bounded("\(underlying)"))"
        }
    }

    /// Why the request got no response, or only part of one.
    public struct TransportFailure: Sendable, CustomStringConvertible {
        /// The transport's error; a `URLError` for the default transport.
        package let underlying: any Error
        /// The request's method.
        package let method: String?
        /// The request's URL.
        package let url: URL?
        /// The status, when the response had begun: the body did not finish.
        package let statusCode: Int?
        /// How many bytes of the body had arrived, when the response had begun.
        package let receivedBytes: Int?

        /// Creates the failure.
        package init(underlying: any Error, method: String?, url: URL?, statusCode: Int? = nil, receivedBytes: Int? = nil) {
            self.underlying = underlying
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.receivedBytes = receivedBytes
        }

        /// The `URLError`, when the transport reported one.
        package var urlError: URLError? { underlying as? URLError }

        /// What went wrong, in words.
        public var description: String {
            let reason = urlError.map { "\($0.localizedDescription) (URLError \($0.code.rawValue))" } ?? bounded("\(underlying)")
            guard let statusCode else { return "\(describe(method, url)) failed before a response arrived: \(reason)" }
            return "\(describe(method, url)) failed after its response began (status \(statusCode), "
                + "\(receivedBytes ?? 0) bytes of the body received): \(reason)"
        }
    }

    /// A response body larger than the request allows (`APIConfiguration`'s `maximumResponseSize`,
    /// `RequestOptions(maximumResponseSize:)`), measured after decompression.
    public struct ResponseTooLarge: Sendable, CustomStringConvertible {
        /// The limit, in bytes.
        package let limit: Int
        /// How many bytes had arrived when the transfer was stopped.
        package let receivedBytes: Int
        /// The `Content-Length` the server announced, when that alone was over the limit.
        package let declaredLength: Int?
        /// The request's method.
        package let method: String?
        /// The URL that answered.
        package let url: URL?
        /// The status, when known.
        package let statusCode: Int?
        /// For a streamed body, which of its limits was passed and what raises it: not the
        /// response size, which a stream does not have.
        package let streamLimit: StreamLimit?

        /// A limit of a streamed body: a line's, an event's.
        package struct StreamLimit: Sendable {
            /// What passed it: "a line", "an event's data".
            package let part: String
            /// What raises it, in words.
            package let remedy: String

            package init(part: String, remedy: String) {
                self.part = part
                self.remedy = remedy
            }
        }

        /// Creates the failure.
        package init(limit: Int, receivedBytes: Int, declaredLength: Int?, method: String?, url: URL?, statusCode: Int?,
                     streamLimit: StreamLimit? = nil) {
            self.limit = limit
            self.receivedBytes = receivedBytes
            self.declaredLength = declaredLength
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.streamLimit = streamLimit
        }

        /// What went wrong, in words.
        public var description: String {
            if let streamLimit {
                return "\(describe(method, url)): \(streamLimit.part) of the stream is over the limit of \(SizeLimit(bytes: limit)); "
                    + "the transfer was stopped. \(streamLimit.remedy)."
            }
            let size = declaredLength.map { "announced \($0) bytes" } ?? "passed it at \(receivedBytes) bytes"
            return "\(describe(method, url)): the response body is over the limit of \(SizeLimit(bytes: limit)) (it \(size)); "
                + "the transfer was stopped. Raise the limit with APIConfiguration(maximumResponseSize:) or RequestOptions(maximumResponseSize:)."
        }
    }

    /// A redirect that was not followed, and could not be the response either.
    public struct RedirectFailure: Sendable, CustomStringConvertible {
        /// Why it was not followed.
        public enum Reason: Sendable, Equatable {
            /// The request had already followed as many redirects as its ``RedirectPolicy``
            /// allows (`maximumRedirects`).
            case tooManyRedirects(limit: Int)
            /// It led from https to http, which its ``RedirectPolicy`` did not allow
            /// (`allowsInsecureRedirects`).
            case insecureRedirect
            /// Its `Location` is no http or https URL.
            case invalidLocation
        }

        /// Why it was not followed.
        public let reason: Reason
        /// The method of the request that was redirected.
        package let method: String?
        /// The URL that answered with the redirect.
        package let url: URL?
        /// The redirect's status.
        package let statusCode: Int
        /// The `Location` header as the server sent it.
        public let location: String

        /// Creates the failure.
        package init(reason: Reason, method: String?, url: URL?, statusCode: Int, location: String) {
            self.reason = reason
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.location = location
        }

        /// What went wrong, in words.
        public var description: String {
            let redirect = "\(describe(method, url)) was redirected (\(statusCode)) to \"\(quoted(location))\""
            return switch reason {
            case .tooManyRedirects(let limit):
                "\(redirect), one redirect more than the \(limit) allowed; not followed. Raise RedirectPolicy.maximumRedirects if the server needs more."
            case .insecureRedirect:
                "\(redirect), from https to http; not followed, since the request would go out unencrypted. Set RedirectPolicy.allowsInsecureRedirects to allow it."
            case .invalidLocation:
                "\(redirect), which is no http or https URL; not followed."
            }
        }
    }

    /// A request to a host with pinned keys that did not go out: its server showed none of
    /// them, or the request could not have been checked. Never retried.
    public struct PinningFailure: Sendable, CustomStringConvertible {
        /// Why the request did not go out.
        public enum Reason: Sendable, Equatable {
            /// The server's certificate holds none of the pinned keys; nothing was sent.
            case keyMismatch
            /// The request would have gone to the pinned host unencrypted (`http:`).
            case notEncrypted
            /// The API's transport cannot check keys (URLSession on Linux, a caller's session);
            /// nothing was sent.
            case transportCannotPin
        }

        /// Why the request did not go out.
        public let reason: Reason
        /// The host whose keys are pinned.
        package let host: String
        /// The pins that host's server must show one of, as configured (`sha256/…`).
        package let pins: [String]
        /// The request's method.
        package let method: String?
        /// The request's URL.
        package let url: URL?

        /// Creates the failure.
        package init(reason: Reason, host: String, pins: [String], method: String?, url: URL?) {
            self.reason = reason
            self.host = host
            self.pins = pins
            self.method = method
            self.url = url
        }

        /// What went wrong, in words.
        public var description: String {
            let pinned = "\(bounded(host)), pinned to \(pins.joined(separator: ", "))"
            return switch reason {
            case .keyMismatch:
                "\(describe(method, url)) was not sent: the server's certificate holds none of the keys of \(pinned)."
            case .notEncrypted:
                "\(describe(method, url)) was not sent: it would go unencrypted to \(pinned)."
            case .transportCannotPin:
                "\(describe(method, url)) was not sent: the API's transport cannot check the keys of \(pinned). Use CurlTransport, or on Apple platforms a URLSessionTransport with a session of its own."
            }
        }
    }

    /// A download whose body could not be written to disk, or moved to its destination.
    public struct FileFailure: Sendable, CustomStringConvertible {
        /// What could not be done.
        public enum Reason: Sendable, Equatable {
            /// A file is at the destination already, and the download was not asked to replace it.
            case destinationExists
            /// The body could not be written beside the destination.
            case writeFailed
            /// The complete body could not be moved to the destination.
            case moveFailed
            /// The destination is not a `file:` URL.
            case notAFileURL
        }

        /// What could not be done.
        public let reason: Reason
        /// Where the file was to go.
        package let destination: URL
        /// The file system's error, if there was one.
        package let underlying: (any Error)?

        /// Creates the failure.
        package init(reason: Reason, destination: URL, underlying: (any Error)? = nil) {
            self.reason = reason
            self.destination = destination
            self.underlying = underlying
        }

        /// What went wrong, in words.
        public var description: String {
            let path = bounded(destination.path)
            let cause = underlying.map { ": \(bounded("\($0)"))" } ?? ""
            return switch reason {
            case .destinationExists: "A file is already at \(path); the download does not replace it unless asked to."
            case .writeFailed: "The download's body could not be written beside \(path)\(cause)"
            case .moveFailed: "The downloaded file could not be moved to \(path)\(cause)"
            case .notAFileURL: "The download's destination \(bounded(destination.absoluteString)) is not a file: URL."
            }
        }
    }

    /// A request or promise that took longer than it was allowed.
    public struct Timeout: Sendable, CustomStringConvertible {
        /// The time allowed, in seconds.
        package let interval: TimeInterval
        /// The request's method, for a request's timeout.
        package let method: String?
        /// The request's URL, for a request's timeout.
        package let url: URL?
        /// Whether the request was still waiting its turn for a connection to its host when its
        /// time ran out: as many requests to the host as the transport allows at once
        /// (`CurlTransport`'s `maximumConnectionsPerHost`, or the `httpMaximumConnectionsPerHost`
        /// of URLSession's configuration on Linux) were running, and none ended in time. Known
        /// over `CurlTransport`, and over `URLSessionTransport` for plain `http`; over `https`
        /// URLSession holds the line itself, and there this is `false`.
        public let waitedForConnection: Bool

        /// Creates the timeout; leave `method` and `url` out for a promise's.
        package init(interval: TimeInterval, method: String? = nil, url: URL? = nil, waitedForConnection: Bool = false) {
            self.interval = interval
            self.method = method
            self.url = url
            self.waitedForConnection = waitedForConnection
        }

        /// What went wrong, in words.
        public var description: String {
            let subject = url == nil ? "The promise" : describe(method, url)
            guard waitedForConnection else { return "\(subject) timed out after \(interval) s." }
            return "\(subject) timed out after \(interval) s waiting for a connection: "
                + "every connection the transport allows to its host was in use."
        }
    }

    /// A response whose status the request does not accept.
    public struct StatusFailure: Sendable, CustomStringConvertible {
        /// The request's method.
        package let method: String?
        /// The URL that answered.
        package let url: URL?
        /// The status code.
        public let statusCode: Int
        /// The response headers.
        public let headers: HTTPHeaders
        /// The response body, whole.
        public let body: Data
        /// The server's error body, decoded by the response parser when it could (see
        /// `JSONParser(decoder:keyPath:errorType:)`); read through ``serverError(as:decoder:)``.
        package let serverError: (any Error & Sendable)?

        /// Creates the failure.
        package init(method: String?, url: URL?, statusCode: Int, headers: HTTPHeaders, body: Data, serverError: (any Error & Sendable)?) {
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
            self.body = body
            self.serverError = serverError
        }

        /// The server's error body as `type`: as the response parser decoded it, else decoded
        /// now from ``body`` with `decoder` (one that converts from snake case, say); `nil` when
        /// the body is not JSON of that type (a proxy's HTML page, say).
        ///
        /// ```swift
        /// struct ShopError: Error, Decodable { let code: Int; let message: String }
        /// print(failure.serverError(as: ShopError.self)?.message ?? "\(failure)")
        /// ```
        public func serverError<ServerError: Error & Decodable>(as type: ServerError.Type, decoder: JSONDecoder = JSONDecoder()) -> ServerError? {
            serverError as? ServerError ?? (try? decoder.decode(ServerError.self, from: body))
        }

        /// What went wrong, in words.
        public var description: String {
            var text = "\(describe(method, url)) answered \(statusCode) "
                + HTTPURLResponse.localizedString(forStatusCode: statusCode)
            if let serverError { text += "; server error: \(serverError)" }
            return text + "; body: \(snippet(of: body))"
        }
    }

    /// A response body that could not be turned into the expected value.
    public struct ParsingFailure: Sendable, CustomStringConvertible {
        /// The type that was expected.
        package let type: String
        /// The request's method.
        package let method: String?
        /// The URL that answered.
        package let url: URL?
        /// The status code.
        package let statusCode: Int
        /// Where in the body decoding failed, as `items[2].price`; empty at the top level.
        public let codingPath: String
        /// The decoder's own error.
        package let underlying: any Error
        /// The first bytes of the body (512 at most, `APIError.snippetLength`).
        package let bodySnippet: Data

        /// Creates the failure; `body` is cut to its first `APIError.snippetLength` bytes, copied,
        /// so that the error does not keep a large body alive.
        package init(type: String, method: String?, url: URL?, statusCode: Int, codingPath: String, underlying: any Error, body: Data) {
            self.type = type
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.codingPath = codingPath
            self.underlying = underlying
            self.bodySnippet = body.prefix(APIError.snippetLength).withUnsafeBytes { Data($0) }
        }

        /// What went wrong, in words.
        public var description: String {
            let location = codingPath.isEmpty ? "" : " at \(codingPath)"
            return "Could not parse \(type)\(location) from \(describe(method, url)) (status \(statusCode)): "
                + "\(Self.explain(underlying)); body: \(snippet(of: bodySnippet))"
        }

        /// A decoding error in one sentence, without the coding path it repeats.
        static func explain(_ error: any Error) -> String {
            guard let error = error as? DecodingError else { return "\(error)" }
            switch error {
            case .typeMismatch(let type, let context):
                return "expected \(type): \(context.debugDescription)"
            case .valueNotFound(let type, let context):
                return "expected \(type) but found null: \(context.debugDescription)"
            case .keyNotFound(let key, let context):
                return "the key \"\(key.stringValue)\" is missing: \(context.debugDescription)"
            case .dataCorrupted(let context):
                return "the data is not valid: \(context.debugDescription)"
            @unknown default:
                return "\(error)"
            }
        }
    }

    /// Why a request's credentials could not be made to work.
    public enum AuthenticationFailure: Sendable, CustomStringConvertible {
        /// The delegate's refresh failed, with its own error.
        case refreshFailed(any Error)
        /// The request was replayed with refreshed credentials and was refused again.
        case stillUnauthorized(statusCode: Int)
        /// More refreshes than ``RefreshLimit`` allows: the server keeps refusing new credentials.
        case tooManyRefreshes(limit: Int, window: TimeInterval)
        /// The delegate does not refresh credentials (``APIDelegate/refreshCredentials(for:)``
        /// was not implemented).
        case refreshUnavailable

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .refreshFailed(let error): "The credentials could not be refreshed: \(error)"
            case .stillUnauthorized(let status): "The request was refused again (\(status)) right after the credentials were refreshed."
            case .tooManyRefreshes(let limit, let window): "More than \(limit) credential refreshes within \(window) s: giving up."
            case .refreshUnavailable: "The server refused the credentials, and the API's delegate does not refresh them (it has no refreshCredentials(for api: AbstractAPI); one written for APIClient is another method, never called)."
            }
        }
    }

    /// How a promise failed when the failure came from the promise machinery, not from the work.
    public enum PromiseFailure: Sendable, CustomStringConvertible {
        /// A promise's value failed a validation step's predicate.
        case validationFailed
        /// A `then` step returned the very promise it was meant to settle, which never could.
        case resolvedWithItself
        /// The resolver was released without settling the promise, which therefore never could.
        case abandoned
        /// ``Promise/race(_:in:)`` was given no promises, so no result can ever arrive.
        case noPromises
        /// Every promise given to ``Promise/any(_:in:)`` failed; their errors, in the order given.
        case allFailed([any Error])

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .validationFailed: "The promise's value failed validation."
            case .resolvedWithItself: "A promise cannot be resolved with itself: a `then` step returned the promise it settles."
            case .abandoned: "The promise's resolver was released without settling it."
            case .noPromises: "`Promise.race` needs at least one promise."
            case .allFailed(let errors):
                "All \(errors.count) promises failed: \(errors.prefix(3).map { bounded("\($0)") }.joined(separator: "; "))"
                    + (errors.count > 3 ? "; and \(errors.count - 3) more" : "")
            }
        }
    }
}

extension DecodingError {
    /// The coding path of the failure, written as `items[2].price`.
    package var codingPathDescription: String {
        let context: Context? = switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context),
             .keyNotFound(_, let context), .dataCorrupted(let context): context
        @unknown default: nil
        }
        var path = context?.codingPath ?? []
        if case .keyNotFound(let key, _) = self { path.append(key) }
        return path.pathDescription
    }
}
