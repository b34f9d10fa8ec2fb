import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Why an answer was refused: its status, or a body that did not parse.
extension APIError {
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
                + "\(Self.explain(underlying))\(snakeCaseHint); body: \(snippet(of: bodySnippet))"
        }

        /// Why a key the body plainly has was missing, when it is in snake_case: a decoder that
        /// converts keys from snake_case looks for `access_token` as `accessToken`, and a
        /// `CodingKey` spelled `access_token` then never matches; and it reads `avatar_url` as
        /// `avatarUrl`, so a property `avatarURL` never matches either.
        private var snakeCaseHint: String {
            guard case .keyNotFound(let key, _)? = underlying as? DecodingError else { return "" }
            if key.stringValue.contains("_") {
                guard bodySnippet.range(of: Data("\"\(key.stringValue)\"".utf8)) != nil else { return "" }
                return " (the body has it: with .convertFromSnakeCase, name its CodingKey in camelCase, or drop the CodingKeys)"
            }
            // `htmlURL` for `html_url`: the conversion makes `htmlUrl`, and never an acronym.
            guard let written = snakeCaseSpelling(of: key.stringValue) else { return "" }
            let read = Self.camelCase(written)
            return " (the body has \"\(written)\", which .convertFromSnakeCase reads as \(read), not \(key.stringValue))"
        }

        /// A snake_case key of the body that spells `key` with other capitals, as `html_url`
        /// spells `htmlURL`; `nil` when the body's start has none.
        private func snakeCaseSpelling(of key: String) -> String? {
            let wanted = key.lowercased()
            let text = String(decoding: bodySnippet, as: UTF8.self)
            let quoted = text.split(separator: "\"", omittingEmptySubsequences: false)
            return quoted.indices.filter { $0 % 2 == 1 }.map { String(quoted[$0]) }.first { candidate in
                candidate.contains("_") && candidate.replacingOccurrences(of: "_", with: "").lowercased() == wanted
                    && Self.camelCase(candidate) != key
            }
        }

        /// `key` as `.convertFromSnakeCase` reads it: `html_url` is `htmlUrl`.
        private static func camelCase(_ key: String) -> String {
            key.split(separator: "_").enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
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
