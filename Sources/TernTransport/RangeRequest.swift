extension [String: String] {
    /// Whether these request headers ask for a range of the body (`Range`). Unless they name
    /// their own encodings, the transports then ask for the body as stored (`Accept-Encoding:
    /// identity`), as the Fetch standard has browsers do: a range of a compressed body is a
    /// slice of its stream, which cannot be undone alone.
    var asksForARange: Bool {
        keys.contains { $0.caseInsensitiveEquals("Range") }
    }
}
