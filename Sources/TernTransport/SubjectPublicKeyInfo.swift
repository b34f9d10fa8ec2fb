/// A public key's SubjectPublicKeyInfo (RFC 5280, §4.1) in DER: what a pin is the SHA-256 of.
/// Made from the key as Apple's Security framework exports it (`SecKeyCopyExternalRepresentation`:
/// PKCS #1 for RSA, the uncompressed point for elliptic curves), which lacks the algorithm that
/// the pin's hash covers. Used by ``URLSessionTransport``'s pinning on Apple platforms; tested on
/// Linux against OpenSSL's.
enum SubjectPublicKeyInfo {
    /// A key's algorithm.
    enum Algorithm {
        case rsa
        /// On a NIST prime curve of this many bits: 256, 384 or 521.
        case ellipticCurve(bits: Int)
    }

    /// The DER of `key` with its algorithm; `nil` for a curve other than P-256, P-384, P-521.
    static func der(of key: [UInt8], algorithm: Algorithm) -> [UInt8]? {
        let identifier: [UInt8]
        switch algorithm {
        case .rsa:
            identifier = tagged(0x30, rsaEncryption + [0x05, 0x00])   // and NULL parameters
        case .ellipticCurve(let bits):
            guard let curve = namedCurves[bits] else { return nil }
            identifier = tagged(0x30, ecPublicKey + curve)
        }
        return tagged(0x30, identifier + tagged(0x03, [0x00] + key))   // a BIT STRING, no unused bits
    }

    /// Object identifiers, each a whole DER element.
    private static let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]   // 1.2.840.113549.1.1.1
    private static let ecPublicKey: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]                // 1.2.840.10045.2.1
    private static let namedCurves: [Int: [UInt8]] = [
        256: [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07],   // prime256v1, 1.2.840.10045.3.1.7
        384: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22],                     // secp384r1, 1.3.132.0.34
        521: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x23],                     // secp521r1, 1.3.132.0.35
    ]

    /// A DER element: its tag, its length (short form below 128, else long), its content.
    private static func tagged(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        guard content.count >= 128 else { return [tag, UInt8(content.count)] + content }
        var length: [UInt8] = []
        var remaining = content.count
        while remaining > 0 {
            length.insert(UInt8(truncatingIfNeeded: remaining), at: 0)
            remaining >>= 8
        }
        return [tag, 0x80 | UInt8(length.count)] + length + content
    }
}
