import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// Whether the request asks for a range of the body (`Range`). Unless it names its own
    /// encodings, the transports then ask for the body as stored (`Accept-Encoding: identity`),
    /// as the Fetch standard has browsers do: a range of a compressed body is a slice of its
    /// stream, which cannot be undone alone.
    var asksForARange: Bool {
        value(forHTTPHeaderField: "Range") != nil
    }
}
