/// Which responses count as success; the others fail with ``APIError/unacceptableStatus(_:)``.
///
/// Set one for a whole API in ``APIConfiguration``'s `validation` or for one request in
/// `RequestOptions(validation:)`:
///
/// ```swift
/// RequestOptions(validation: .statusCodes(200..<400))
/// RequestOptions(validation: .custom { $0.statusCode == 200 && $0.headers["X-Ok"] == "1" })
/// ```
public struct Validation: Sendable {
    private let accepts: @Sendable (Response) -> Bool
    /// Whether `accepts` is the app's own code, which may wait for another request (and so
    /// never runs on the transport's thread).
    let isCustom: Bool

    private init(isCustom: Bool = false, accepts: @escaping @Sendable (Response) -> Bool) {
        self.accepts = accepts
        self.isCustom = isCustom
    }

    /// A validation that accepts the responses for which `accepts` returns `true`.
    public static func custom(_ accepts: @escaping @Sendable (Response) -> Bool) -> Validation {
        Validation(isCustom: true, accepts: accepts)
    }

    /// Accepts the status codes in `codes`.
    public static func statusCodes(_ codes: some RangeExpression<Int> & Sendable) -> Validation {
        // The usual ranges checked in place: through the protocol, each request paid a witness
        // call into an unspecialized closure.
        if let range = codes as? Range<Int> { return Validation { range.contains($0.statusCode) } }
        if let range = codes as? ClosedRange<Int> { return Validation { range.contains($0.statusCode) } }
        return Validation { codes.contains($0.statusCode) }
    }

    /// Accepts exactly the status codes given.
    public static func statusCodes(_ codes: Set<Int>) -> Validation {
        Validation { codes.contains($0.statusCode) }
    }

    /// Accepts every response.
    public static let acceptAll = Validation { _ in true }

    /// Whether `response` is acceptable.
    package func accepts(_ response: Response) -> Bool {
        accepts(response)
    }
}
