import Foundation

/// How a request's value comes out of an accepted response.
struct ResponseDecoding<Value: Sendable>: Sendable {
    let decode: @Sendable (Response, any ResponseParser) throws -> Value
}

extension ResponseDecoding where Value: Decodable {
    /// Through the response parser; an empty body is `nil` for an optional value.
    static var decodable: ResponseDecoding {
        ResponseDecoding { response, parser in
            if response.body.isEmpty, let none = (Value.self as? any ExpressibleByNilLiteral.Type)?.init(nilLiteral: ()) as? Value {
                return none
            }
            guard !response.body.isEmpty else { throw EmptyBody() }
            return try parser.parse(Value.self, from: response)
        }
    }
}

extension ResponseDecoding where Value == Void {
    /// The body does not matter.
    static var ignored: ResponseDecoding { ResponseDecoding { _, _ in () } }
}

extension ResponseDecoding where Value == Data {
    /// The body as it came.
    static var data: ResponseDecoding { ResponseDecoding { response, _ in response.body } }
}

extension ResponseDecoding where Value == Response {
    /// The whole response.
    static var response: ResponseDecoding { ResponseDecoding { response, _ in response } }
}

extension ResponseDecoding where Value == String {
    /// The body as text in the charset of its `Content-Type`, UTF-8 by default.
    static var text: ResponseDecoding {
        ResponseDecoding { response, _ in
            let encoding = charset(of: response.headers["Content-Type"])
            guard let text = String(data: response.body, encoding: encoding) else { throw Undecodable(encoding: encoding) }
            return text
        }
    }

    private static func charset(of contentType: String?) -> String.Encoding {
        let parameters = contentType?.split(separator: ";").dropFirst() ?? []
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "charset" else { continue }
            switch pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased() {
            case "iso-8859-1", "latin1": return .isoLatin1
            case "us-ascii", "ascii": return .ascii
            case "utf-16": return .utf16
            default: return .utf8
            }
        }
        return .utf8
    }

    private struct Undecodable: Error, CustomStringConvertible {
        let encoding: String.Encoding
        var description: String { "the body is not valid \(encoding) text" }
    }
}

/// A body that was empty where a value was expected.
struct EmptyBody: Error, CustomStringConvertible {
    var description: String { "the body is empty; declare the value optional, or Void, to accept that" }
}
