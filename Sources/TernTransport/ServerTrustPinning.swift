#if canImport(Security) && canImport(CryptoKit) && !canImport(FoundationNetworking)
import CryptoKit
import Foundation
import Security

/// On Apple platforms: whether a server's trust passes the system's evaluation and its own
/// certificate's key hashes to one of the pins, as libcurl checks them.
enum ServerTrustPinning {
    /// Whether `trust` is one to go on with: valid, and its leaf's key among `pins` (Base64
    /// SHA-256 of a SubjectPublicKeyInfo).
    static func accepts(_ trust: SecTrust, pins: [String]) -> Bool {
        guard SecTrustEvaluateWithError(trust, nil), let hash = keyHash(of: trust) else { return false }
        return pins.contains(hash)
    }

    /// The Base64 SHA-256 of the leaf certificate's SubjectPublicKeyInfo.
    private static func keyHash(of trust: SecTrust) -> String? {
        guard let leaf = leafCertificate(of: trust), let key = SecCertificateCopyKey(leaf),
              let attributes = SecKeyCopyAttributes(key) as? [String: Any],
              let exported = SecKeyCopyExternalRepresentation(key, nil) as Data? else { return nil }
        let type = attributes[kSecAttrKeyType as String] as? String
        let algorithm: SubjectPublicKeyInfo.Algorithm
        if type == (kSecAttrKeyTypeRSA as String) {
            algorithm = .rsa
        } else if type == (kSecAttrKeyTypeECSECPrimeRandom as String), let bits = attributes[kSecAttrKeySizeInBits as String] as? Int {
            algorithm = .ellipticCurve(bits: bits)
        } else {
            return nil
        }
        guard let info = SubjectPublicKeyInfo.der(of: [UInt8](exported), algorithm: algorithm) else { return nil }
        return Data(SHA256.hash(data: Data(info))).base64EncodedString()
    }

    /// The server's own certificate; none before the releases that have
    /// `SecTrustCopyCertificateChain`, where `URLSessionTransport.canPinKeys` is `false`
    /// (the older ways are deprecated, and would warn).
    private static func leafCertificate(of trust: SecTrust) -> SecCertificate? {
        guard #available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *) else { return nil }
        return (SecTrustCopyCertificateChain(trust) as? [SecCertificate])?.first
    }
}
#endif
