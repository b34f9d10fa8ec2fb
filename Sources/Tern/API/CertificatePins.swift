import Foundation

/// The keys an API's servers must show, per host: the SHA-256 of a certificate's public key
/// (its SubjectPublicKeyInfo), in Base64, as OkHttp's `CertificatePinner` and HPKP write them.
/// A request to a pinned host goes out only once its server's own certificate (the leaf, not an
/// authority above it: libcurl checks that one) has shown one of the host's keys, after the
/// usual verification; otherwise it fails with ``APIError/pinningFailed(_:)``, is not retried,
/// and nothing is sent. A connection is reused only by requests with the same pins.
///
/// A host is an exact name (`api.shop.example`) or `*.` and a name, which matches one label
/// more, no fewer and no more (`*.shop.example` matches `api.shop.example`, not `shop.example`
/// nor `a.b.shop.example`). A host matching several entries must show a key of any of them.
/// Pin a backup key beside the current one, so that a new key can be deployed.
///
/// ```swift
/// let pins = try CertificatePins([
///     "api.shop.example": ["sha256/r8udi/Mxd6pLOS73t7GpHAvPdwWQiICjvcJqgsyjpsE=",
///                          "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
/// ])
/// let shop = APIClient(configuration: APIConfiguration(baseURL: "https://api.shop.example", certificatePins: pins))
/// ```
///
/// The hash of a server's key, with OpenSSL:
/// `openssl s_client -connect api.shop.example:443 </dev/null | openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
///
/// Pins are checked by ``CurlTransport``, and on Apple platforms by ``URLSessionTransport`` with
/// a session of its own; over a transport that cannot check them (URLSession on Linux), a
/// request to a pinned host fails with ``APIError/pinningFailed(_:)`` before it is sent.
public struct CertificatePins: Sendable, Equatable {
    /// A pin that is no `sha256/` and the Base64 of 32 bytes, or a host that is no host name.
    public struct InvalidPin: Error, Sendable, Equatable, CustomStringConvertible {
        /// The host it was given for.
        package let host: String
        /// The pin as given.
        package let pin: String
        /// Whether the host is what is wrong, not the pin.
        package var isTheHost = false

        /// What is wrong, in words.
        public var description: String {
            if pin.isEmpty { return "The host \"\(host)\" is given no pins: give it its key's and a backup's." }
            if isTheHost { return "\"\(host)\" is not a host name, nor \"*.\" and one: its pins cannot be checked." }
            return "The pin \"\(pin)\" for \"\(host)\" is not \"sha256/\" followed by the Base64 of a 32-byte hash."
        }
    }

    /// Each pattern's hashes in Base64, without `sha256/`; patterns in lower case.
    private let entries: [Entry]

    /// Pins `pins[host]` for each host.
    ///
    /// - Throws: ``InvalidPin`` for a pin that is not `sha256/` and the Base64 of 32 bytes,
    ///   for a host with no pins, and for a host pattern that is not a name or `*.` and a name.
    public init(_ pins: [String: [String]]) throws(InvalidPin) {
        var entries: [Entry] = []
        for (host, hostPins) in pins.sorted(by: { $0.key < $1.key }) {
            let pattern = host.lowercased()
            let name = pattern.hasPrefix("*.") ? String(pattern.dropFirst(2)) : pattern
            guard !hostPins.isEmpty else { throw InvalidPin(host: host, pin: "") }
            guard !name.isEmpty, !name.contains("*"), !name.hasPrefix("."), !name.hasSuffix("."), !name.contains(".."),
                  name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == ":") }) else {
                throw InvalidPin(host: host, pin: hostPins[0], isTheHost: true)
            }
            let hashes = try hostPins.map { pin throws(InvalidPin) -> String in
                guard pin.hasPrefix("sha256/"), let hash = Data(base64Encoded: String(pin.dropFirst(7))), hash.count == 32 else {
                    throw InvalidPin(host: host, pin: pin)
                }
                return hash.base64EncodedString()
            }
            // An address in its one spelling, as hosts are looked up (`0:0::1` is `::1`).
            entries.append(Entry(pattern: pattern.hasPrefix("*.") ? pattern : HostName.canonical(pattern), hashes: hashes))
        }
        self.entries = entries
    }

    /// The hashes (Base64, without `sha256/`) that a server for `host` must show one of; none
    /// when the host is not pinned. An IP address is looked up in its one spelling, as libcurl
    /// connects to it: a pin for `127.0.0.1` holds for `127.1`, `0x7f.0.0.1` and
    /// `[::ffff:127.0.0.1]` too, and beside its own for a NAT64 address of it (`64:ff9b::7f00:1`),
    /// which reaches the same server through the network's translator.
    package func hashes(for host: String) -> [String] {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }   // the root's dot: the same host
        name = HostName.canonical(name)
        let names = [name] + (HostName.nat64IPv4(name).map { [$0] } ?? [])
        var hashes: [String] = []
        for entry in entries where names.contains(where: { Self.matches(entry.pattern, $0) }) {
            hashes += entry.hashes.filter { !hashes.contains($0) }
        }
        return hashes
    }

    /// Whether `pattern` covers `name`: the same name, or `*.` and a name one label below.
    private static func matches(_ pattern: String, _ name: String) -> Bool {
        guard pattern.hasPrefix("*.") else { return pattern == name }
        let parent = pattern.dropFirst(2)
        guard name.count > parent.count + 1, name.hasSuffix(parent) else { return false }
        let label = name.dropLast(parent.count)
        return label.last == "." && !label.dropLast().isEmpty && !label.dropLast().contains(".")
    }

    /// A host pattern and the hashes its servers must show one of.
    private struct Entry: Sendable, Equatable {
        let pattern: String
        let hashes: [String]
    }
}
