import Foundation

// Why an exchange failed on its way: the network, the answer's size, redirects, pins, files, time.
extension APIError {
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
        /// Whether the limit passed was a download's own (its `maximumSize`), which the
        /// configuration's and the options' limits for bodies in memory do not raise.
        package let isDownload: Bool

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
                     streamLimit: StreamLimit? = nil, isDownload: Bool = false) {
            self.limit = limit
            self.receivedBytes = receivedBytes
            self.declaredLength = declaredLength
            self.method = method
            self.url = url
            self.statusCode = statusCode
            self.streamLimit = streamLimit
            self.isDownload = isDownload
        }

        /// What went wrong, in words.
        public var description: String {
            if let streamLimit {
                return "\(describe(method, url)): \(streamLimit.part) of the stream is over the limit of \(SizeLimit(bytes: limit)); "
                    + "the transfer was stopped. \(streamLimit.remedy)."
            }
            let size = declaredLength.map { "announced \($0) bytes" } ?? "passed it at \(receivedBytes) bytes"
            if isDownload {
                return "\(describe(method, url)): the file is over the download's limit of \(SizeLimit(bytes: limit)) (it \(size)); "
                    + "the transfer was stopped and nothing is kept. Raise the limit with download(route:to:maximumSize:)."
            }
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
            let redirect = "\(describe(method, url)) was redirected (\(statusCode)) to \"\(quoted(hidingPassword(in: location)))\""
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
        /// For a mismatch, the pin of the key the server's certificate holds (`sha256/…`), when
        /// the transport could read it.
        package let presentedKey: String?
        /// The request's method.
        package let method: String?
        /// The request's URL.
        package let url: URL?

        /// Creates the failure.
        package init(reason: Reason, host: String, pins: [String], presentedKey: String? = nil, method: String?, url: URL?) {
            self.reason = reason
            self.host = host
            self.pins = pins
            self.presentedKey = presentedKey
            self.method = method
            self.url = url
        }

        /// What went wrong, in words.
        public var description: String {
            let pinned = "\(bounded(host)), pinned to \(pins.joined(separator: ", "))"
            return switch reason {
            case .keyMismatch:
                "\(describe(method, url)) was not sent: the server's certificate holds none of the keys of \(pinned)"
                    + (presentedKey.map { "; it holds \($0)." } ?? ".")
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
        /// Whether the request was waiting for its API delegate's `refreshCredentials(for:)` to
        /// finish, or (with no URL) the refresh itself ran out of time: a refresh that never
        /// ended, or one waiting for a request it made itself.
        package let waitedForRefresh: Bool
        /// Whether a promise's `wait()` held the main queue (or the main thread, which drains
        /// it) while it waited, which a step of the promise's chain on the main queue needs.
        package let heldTheMainQueue: Bool
        /// Whether the request was a download, whose time may run out while its bytes still come.
        package let wasDownload: Bool

        /// Creates the timeout; leave `method` and `url` out for a promise's.
        package init(interval: TimeInterval, method: String? = nil, url: URL? = nil, waitedForConnection: Bool = false,
                     waitedForRefresh: Bool = false, heldTheMainQueue: Bool = false, wasDownload: Bool = false) {
            self.interval = interval
            self.method = method
            self.url = url
            self.waitedForConnection = waitedForConnection
            self.waitedForRefresh = waitedForRefresh
            self.heldTheMainQueue = heldTheMainQueue
            self.wasDownload = wasDownload
        }

        /// What went wrong, in words.
        public var description: String {
            let subject = url == nil ? "The promise" : describe(method, url)
            if waitedForRefresh {
                let advice = "A request the refresh makes from a callback waits for the refresh itself: make it with "
                    + "RequestOptions(authenticates: false)."
                guard url != nil else { return "refreshCredentials(for:) did not finish within \(interval) s, the API's timeout. " + advice }
                return "\(subject) timed out after \(interval) s waiting for its API delegate's refreshCredentials(for:) to finish. " + advice
            }
            if heldTheMainQueue {
                return "The promise did not settle within \(interval) s of wait(), which held the main queue all that time: "
                    + "a step of its chain on the main queue (an API's default responseQueue, a then or map in: .main) "
                    + "runs only once wait() returns. Await the promise's value, or call wait() off the main queue."
            }
            if wasDownload, !waitedForConnection {
                return "\(subject) timed out after \(interval) s: a download's timeout spans its whole transfer. Give one that may "
                    + "run longer a timeout of its own (RequestOptions(timeout:)), or .infinity with an idle timeout "
                    + "(RequestOptions(idleTimeout:)), which ends it only when its bytes stop coming."
            }
            guard waitedForConnection else { return "\(subject) timed out after \(interval) s." }
            return "\(subject) timed out after \(interval) s waiting for a connection: "
                + "every connection the transport allows to its host was in use."
        }
    }
}
