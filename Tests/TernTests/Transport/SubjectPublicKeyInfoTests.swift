#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// The SubjectPublicKeyInfo made from a key as Apple's Security framework exports it is
/// OpenSSL's, byte for byte, for RSA keys of several sizes and the three NIST curves: so a pin
/// computed with OpenSSL matches one computed on Apple platforms.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SubjectPublicKeyInfoTests {
    /// OpenSSL's SPKI of a new key made with `arguments`, and the key as Security exports it:
    /// PKCS #1 for RSA (OpenSSL's `-RSAPublicKey_out`), the uncompressed point for a curve (the
    /// BIT STRING's content: the SPKI's last bytes).
    ///
    /// openssl runs on a dispatch queue, not on the test's thread: the tests share a pool of as
    /// many threads as cores, and a key made there held one for seconds under the sanitizer,
    /// starving tests beside it.
    static func key(_ arguments: [String], rsa: Bool, pointLength: Int = 0) async throws -> (spki: [UInt8], exported: [UInt8]) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try makeKey(arguments, rsa: rsa, pointLength: pointLength) })
            }
        }
    }

    private static func makeKey(_ arguments: [String], rsa: Bool, pointLength: Int) throws -> (spki: [UInt8], exported: [UInt8]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-spki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = { (name: String) in directory.appendingPathComponent(name).path }
        try TestCertificates.openssl(["genpkey"] + arguments + ["-out", file("key.pem")])
        try TestCertificates.openssl(["pkey", "-in", file("key.pem"), "-pubout", "-outform", "DER", "-out", file("spki.der")])
        let spki = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file("spki.der"))))
        guard rsa else { return (spki, Array(spki.suffix(pointLength))) }
        try TestCertificates.openssl(["rsa", "-pubin", "-inform", "DER", "-in", file("spki.der"), "-RSAPublicKey_out", "-outform", "DER", "-out", file("pkcs1.der")])
        return (spki, try [UInt8](Data(contentsOf: URL(fileURLWithPath: file("pkcs1.der")))))
    }

    /// 1024 and 2048 bits: lengths in one and in two bytes (4096 adds none, and takes seconds).
    @Test(arguments: [1024, 2048])
    func rsaKeysAreOpenSSLs(bits: Int) async throws {
        let (spki, exported) = try await Self.key(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)"], rsa: true)
        #expect(SubjectPublicKeyInfo.der(of: exported, algorithm: .rsa) == spki)
    }

    @Test(arguments: [(256, "P-256", 65), (384, "P-384", 97), (521, "P-521", 133)])
    func curveKeysAreOpenSSLs(bits: Int, curve: String, pointLength: Int) async throws {
        let (spki, point) = try await Self.key(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)"], rsa: false, pointLength: pointLength)
        #expect(point.first == 0x04)
        #expect(SubjectPublicKeyInfo.der(of: point, algorithm: .ellipticCurve(bits: bits)) == spki)
    }

    /// The key a certificate holds, read from its PEM as libcurl hands it over (to say which
    /// key a server showed that matched no pin), is the one OpenSSL pins for its key file, for
    /// a server's certificate and its authority's; a certificate cut short anywhere has none.
    @Test func aCertificatesKeyIsTheOneOpenSSLPins() async throws {
        let certificates = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try TestCertificates() }) }
        }
        for (certificate, key) in [("server.pem", "server.key"), ("ca.pem", "ca.key")] {
            let pem = try String(contentsOf: certificates.directory.appendingPathComponent(certificate), encoding: .utf8)
            #expect(try SubjectPublicKeyInfo.pin(ofCertificatePEM: pem).map { "sha256/" + $0 } == certificates.pin(ofKey: key))
            let der = try #require(Data(base64Encoded: pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()))
            #expect((0..<der.count).allSatisfy { SubjectPublicKeyInfo.of(certificate: Array(der.prefix($0))) == nil })
        }
        #expect(SubjectPublicKeyInfo.pin(ofCertificatePEM: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----") == nil)
    }

    @Test func anotherCurveHasNone() {
        #expect(SubjectPublicKeyInfo.der(of: [0x04, 1, 2], algorithm: .ellipticCurve(bits: 255)) == nil)
    }
}
#endif
