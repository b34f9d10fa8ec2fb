/// Why an upload was stopped: its body did not have the length it stated. A stream that yields
/// more bytes than its stated length, or a file that grows while it is sent, would otherwise put
/// the extra bytes on the connection, where the server reads them as another request; one that
/// yields fewer would leave the server waiting for the rest. The transfer is stopped and its
/// connection closed, and the request fails with this error.
public struct BodyLengthMismatch: Error, Sendable, Equatable, CustomStringConvertible {
    /// The length the body stated, in bytes.
    package let statedLength: Int64
    /// How many bytes the body had when it was stopped: fewer than the stated length when it
    /// ended early, one more than it when it ran long (nothing past that is read).
    package let actualLength: Int64

    /// Creates the error.
    package init(statedLength: Int64, actualLength: Int64) {
        self.statedLength = statedLength
        self.actualLength = actualLength
    }

    /// What went wrong, in words.
    public var description: String {
        actualLength > statedLength
            ? "The request body ran past its stated length of \(statedLength) bytes; it was stopped there, and its connection closed."
            : "The request body ended after \(actualLength) of its stated \(statedLength) bytes."
    }
}
