import Foundation

/// A public key's SubjectPublicKeyInfo (RFC 5280, §4.1) in DER: what a pin is the SHA-256 of.
/// Made from the key as Apple's Security framework exports it (`SecKeyCopyExternalRepresentation`:
/// PKCS #1 for RSA, the uncompressed point for elliptic curves), which lacks the algorithm that
/// the pin's hash covers, for ``URLSessionTransport``'s pinning on Apple platforms; or read from
/// a certificate, to say which key a server showed that matched no pin. Tested on Linux against
/// OpenSSL's.
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

    /// The pin (Base64 of the SHA-256 of its SubjectPublicKeyInfo) of the certificate in
    /// `pem`; `nil` for what is no certificate.
    static func pin(ofCertificatePEM pem: String) -> String? {
        let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: base64, options: .ignoreUnknownCharacters),
              let info = of(certificate: [UInt8](der)) else { return nil }
        return Data(SHA256Digest.digest(Data(info))).base64EncodedString()
    }

    /// The SubjectPublicKeyInfo element of a certificate in DER (RFC 5280, §4.1): in its
    /// tbsCertificate after an optional version, the serial number, signature algorithm,
    /// issuer, validity and subject.
    static func of(certificate der: [UInt8]) -> ArraySlice<UInt8>? {
        guard let certificate = element(der[...]), certificate.tag == 0x30,
              let tbs = element(certificate.content), tbs.tag == 0x30, var field = element(tbs.content) else { return nil }
        if field.tag == 0xA0 {   // [0] version
            guard let next = element(field.rest) else { return nil }
            field = next
        }
        for _ in 0..<5 {   // serial number, signature, issuer, validity, subject
            guard let next = element(field.rest) else { return nil }
            field = next
        }
        return field.tag == 0x30 ? field.whole : nil
    }

    /// The DER element at the start of `bytes`: its tag, content, the whole element and what
    /// follows it; `nil` if it runs past `bytes` or its length is not one DER allows here.
    private static func element(_ bytes: ArraySlice<UInt8>) -> (tag: UInt8, content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>, rest: ArraySlice<UInt8>)? {
        guard bytes.count >= 2 else { return nil }
        let start = bytes.startIndex
        var offset = start + 2
        var length = Int(bytes[start + 1])
        if length >= 0x80 {
            let count = length & 0x7F
            guard (1...4).contains(count), bytes.endIndex - offset >= count else { return nil }
            length = bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
            offset += count
        }
        guard bytes.endIndex - offset >= length else { return nil }
        let end = offset + length
        return (bytes[start], bytes[offset..<end], bytes[start..<end], bytes[end...])
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
