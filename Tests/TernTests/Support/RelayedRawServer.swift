import Foundation

/// A ``RawServer`` behind a ``TLSRelay`` offering `h2`, its certificate signed by a test CA: what
/// the HTTP/2 suites script their servers on. Both stop when it is let go of.
final class RelayedRawServer: Sendable {
    private let raw: RawServer
    private let relay: TLSRelay

    init(certificates: TestCertificates, script: @escaping @Sendable (RawServer.Connection) -> Void) throws {
        raw = try RawServer(script: script)
        do {
            relay = try TLSRelay(certificates: certificates, to: raw.port, offeringHTTP2: true)
        } catch {
            raw.stop()
            throw error
        }
    }

    deinit {
        relay.stop()
        raw.stop()
    }

    /// The relay's `https` URL.
    var url: String { relay.baseURL }
}
