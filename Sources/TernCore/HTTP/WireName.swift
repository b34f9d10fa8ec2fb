/// A name that goes on the wire as a string, given a type of its own so that it is not mixed up
/// with other strings: `HTTPMethod`, `MIMEType`. A conforming type holds its `rawValue`,
/// sent as it is, and gets the rest here: creation from a string literal, and the description.
package protocol WireName: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible
where RawValue == String, StringLiteralType == String {
    /// Creates the name from the string sent on the wire; any string is accepted.
    init(rawValue: String)
}

extension WireName {
    /// Creates the name from a string literal.
    package init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// The string sent on the wire.
    package var description: String { rawValue }
}
