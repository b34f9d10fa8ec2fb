import Foundation

/// How a request's value comes out of an accepted response.
///
/// Inlinable, like the `request` methods that pick one, so that decoding is specialized for the
/// value type in the caller's module.
@usableFromInline
struct ResponseDecoding<Value: Sendable>: Sendable {
    @usableFromInline
    let decode: @Sendable (Response, any ResponseParser) throws -> Value
    /// Whether it reads the body through (the parser, or text), work that grows with the body;
    /// the others take the body, or the file it went to, as it is.
    @usableFromInline
    let parses: Bool

    @inlinable
    init(parses: Bool = false, decode: @escaping @Sendable (Response, any ResponseParser) throws -> Value) {
        self.decode = decode
        self.parses = parses
    }

    /// The value of `response`, or the ``APIError`` that says why there is none.
    @inlinable
    func value(of response: Response, parser: any ResponseParser) -> Result<Value, APIError> {
        do {
            return .success(try decode(response, parser))
        } catch {
            return .failure(.parsing(error, as: Value.self, from: response))
        }
    }
}

extension ResponseDecoding where Value: Decodable {
    /// Through the response parser; an empty body is `nil` for an optional value.
    @inlinable
    static var decodable: ResponseDecoding {
        ResponseDecoding(parses: true) { response, parser in
            if response.body.isEmpty, let optional = Value.self as? any OptionalValue.Type, let none = optional.none as? Value {
                return none
            }
            guard !response.body.isEmpty else { throw EmptyBody() }
            return try parser.parse(Value.self, from: response)
        }
    }
}

extension ResponseDecoding where Value: Decodable {
    /// What the `request` overloads pick for a value type: `Data` as it came, a `String` as
    /// text, anything else through the parser.
    @inlinable
    static var automatic: ResponseDecoding {
        if let data = ResponseDecoding<Data>.data as? ResponseDecoding { return data }
        if let text = ResponseDecoding<String>.text as? ResponseDecoding { return text }
        return .decodable
    }
}

extension ResponseDecoding where Value == Void {
    /// The body does not matter.
    @inlinable
    static var ignored: ResponseDecoding { ResponseDecoding { _, _ in () } }
}

extension ResponseDecoding where Value == Data {
    /// The body as it came.
    @inlinable
    static var data: ResponseDecoding { ResponseDecoding { response, _ in response.body } }
}

extension ResponseDecoding where Value == Response {
    /// The whole response.
    @inlinable
    static var response: ResponseDecoding { ResponseDecoding { response, _ in response } }
}

extension ResponseDecoding where Value == String {
    /// The body as text in the charset of its `Content-Type`, UTF-8 by default.
    @inlinable
    static var text: ResponseDecoding { ResponseDecoding(parses: true) { response, _ in try text(of: response) } }

    @usableFromInline
    static func text(of response: Response) throws -> String {
        let encoding = String.Encoding(charsetOf: response.headers["Content-Type"])
        guard let text = String(data: response.body, encoding: encoding) else { throw Undecodable(encoding: encoding) }
        return text
    }

    private struct Undecodable: Error, CustomStringConvertible {
        let encoding: String.Encoding
        var description: String { "the body is not valid \(encoding) text" }
    }
}

/// Lets generic code make `nil` of an optional type it only knows as `Value`.
///
/// Not `ExpressibleByNilLiteral`: a release build specialized for an optional value crashed the
/// compiler (Swift 6.3, IR generation) on `(Value.self as? any ExpressibleByNilLiteral.Type)?.init(nilLiteral: ())`.
@usableFromInline
protocol OptionalValue {
    /// `nil`.
    static var none: Self { get }
}

extension Optional: OptionalValue {}

/// A body that was empty where a value was expected.
@usableFromInline
struct EmptyBody: Error, CustomStringConvertible {
    @inlinable
    init() {}

    @usableFromInline
    var description: String { "the body is empty; declare the value optional, or Void, to accept that" }
}

extension APIError {
    /// The error for a response whose value could not be made: Tern's own errors pass as they
    /// are, others become ``parsingFailed(_:)`` with the coding path and the start of the body.
    @usableFromInline
    static func parsing(_ error: any Error, as type: Any.Type, from response: Response) -> APIError {
        wrapping(error) { error in
            .parsingFailed(.init(
                type: String(describing: type), method: response.method, url: response.url,
                statusCode: response.statusCode, codingPath: (error as? DecodingError)?.codingPathDescription ?? "",
                underlying: error, body: response.body
            ))
        }
    }
}
