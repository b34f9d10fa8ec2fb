import Foundation

/// Parameters sent as a JSON body.
///
/// ```swift
/// JSONParameters(product)
/// JSONParameters(product, encoder: snakeCaseEncoder, headers: ["X-Trace": "1"])
/// ```
public struct JSONParameters<Value: Encodable & Sendable>: RequestParameters {
    /// The value sent.
    package var value: Value
    /// The encoder that writes it.
    package var encoder: JSONEncoder
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// Creates JSON parameters; configure `encoder` for dates, key strategies and formatting.
    public init(_ value: Value, encoder: JSONEncoder = JSONEncoder(), headers: HTTPHeaders = [:]) {
        self.value = value
        self.encoder = encoder
        self.headers = headers
    }

    /// Writes the parameters and their `Content-Type` into `draft`.
    public func encode(into draft: inout RequestDraft) throws {
        do {
            draft.body = .data(try encoder.encode(value))
        } catch {
            let path = (error as? EncodingError)?.codingPathDescription ?? ""
            let parameter = "JSONParameters<\(Value.self)>" + (path.isEmpty ? "" : " at \(path)")
            throw APIError.encodingFailed(.init(parameter: parameter, underlying: error))
        }
        draft.headers["Content-Type"] = "application/json"
    }
}

extension EncodingError {
    /// The coding path of the failure, written as `items[2].price`.
    var codingPathDescription: String {
        guard case .invalidValue(_, let context) = self else { return "" }
        return context.codingPath.pathDescription
    }
}
