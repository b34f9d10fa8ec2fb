import Foundation
import Tern

/// The error a ``StubTransport`` fails a request with when no stub matches it, or a
/// ``RecordingTransport`` replaying when no recorded exchange does: it shows the request and
/// every stub (or the nearest recorded exchanges) it was compared with, and why each did not
/// match.
///
/// The request fails with `APIError.transportFailed` carrying it as `underlying`.
public struct UnmatchedRequest: Error, Sendable, CustomStringConvertible {
    /// The request as the transport received it.
    package let request: RecordedRequest
    /// Each stub, and why it did not match, in the order they were tried: the last added first;
    /// or the nearest recorded exchanges, nearest first.
    package let mismatches: [(stub: String, reason: String)]
    /// What the request was compared with: stubs, or a recording's exchanges.
    var subject = "stub"
    /// Where those would be, when there are none: a recording's file, and whether it exists.
    var emptySource: String?
    /// Values the words never show, each written as `[redacted]`: the request's credentials and
    /// secrets, which a recording keeps out of its file, and a CI log keeps too.
    var hidden: [String] = []
    /// The header that kept a recording in `missing` mode from sending the request: it holds
    /// the placeholder a replayed credential is kept as.
    var unsentCredential: String?

    /// What went wrong, in words.
    public var description: String {
        var text = "No \(subject) matches \(request.method) \(request.target)"
        if mismatches.isEmpty {
            text += ": there are no \(subject)s\(emptySource.map { " \($0)" } ?? "")."
        } else {
            text += ". Compared with:"
            for (index, mismatch) in mismatches.enumerated() {
                text += "\n  \(index + 1). \(mismatch.stub): \(mismatch.reason)"
            }
        }
        if let unsentCredential {
            text += "\nIt was not sent: its \(unsentCredential) holds \(Redactor.placeholder), as the recording keeps a credential"
                + " a replayed answer issued (a sign-in's or a refresh's token), and no server takes it. Record the test again"
                + " (TERN_RECORDING=record)."
        }
        for value in hidden where text.contains(value) { text = text.replacingOccurrences(of: value, with: Redactor.placeholder) }
        return text
    }
}
