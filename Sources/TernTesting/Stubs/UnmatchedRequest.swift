import Foundation
import Tern

/// The error a ``StubTransport`` fails a request with when no stub matches it: it shows the
/// request and every stub it was compared with, and why each did not match.
///
/// The request fails with `APIError.transportFailed` carrying it as `underlying`.
public struct UnmatchedRequest: Error, Sendable, CustomStringConvertible {
    /// The request as the transport received it.
    package let request: RecordedRequest
    /// Each stub, and why it did not match, in the order they were tried: the last added first.
    package let mismatches: [(stub: String, reason: String)]

    /// What went wrong, in words.
    public var description: String {
        var text = "No stub matches \(request.method) \(request.target)"
        guard !mismatches.isEmpty else { return text + ": there are no stubs." }
        text += ". Compared with:"
        for (index, mismatch) in mismatches.enumerated() {
            text += "\n  \(index + 1). \(mismatch.stub): \(mismatch.reason)"
        }
        return text
    }
}
