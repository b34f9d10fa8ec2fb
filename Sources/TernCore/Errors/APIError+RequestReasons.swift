import Foundation

// Why a request was not sent: it could not be built or encoded.
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
}
