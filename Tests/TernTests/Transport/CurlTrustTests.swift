#if os(Linux)
import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// What `CurlTransport(trusting:)` tells libcurl: that file of authorities and no directory
/// besides. (The handshake itself is tested in `CurlTLSTests`; no test can plant an authority
/// in the system's directory, so the directory being cleared is checked here, as options.)
@Suite(.onTestThreads) struct CurlTrustTests {
    @Test func trustingAFileClearsTheSystemDirectoryOfAuthorities() {
        let file = URL(fileURLWithPath: "/tmp/test-ca.pem")
        let options = CurlTrust.only(certificates: file).options
        #expect(options.count == 2)
        #expect(options.contains { $0.option == CurlOption.caInfo && $0.value == file.path })
        #expect(options.contains { $0.option == CurlOption.caPath && $0.value == nil })
    }

    @Test func theSystemsTrustKeepsLibcurlsDefaults() {
        #expect(CurlTrust.system.options.isEmpty)
    }

    /// A file that cannot serve fails the transport as it is made, by name, not each request
    /// later with words about TLS.
    @Test(arguments: ["missing", "directory", "der", "empty", "pipe"])
    func authoritiesThatCannotServeFailTheTransportAsItIsMade(_ kind: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-trust-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("ca.pem")
        switch kind {
        case "directory": try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        case "der": try Data([0x30, 0x82, 0x01, 0x0A, 0x02, 0x82, 0x01, 0x01]).write(to: file)
        case "empty": try Data().write(to: file)
        case "pipe": #expect(mkfifo(file.path, 0o600) == 0)   // would wait for a writer if opened
        default: break
        }
        #expect {
            _ = try CurlTransport(trusting: file)
        } throws: { error in
            "\(error)".hasPrefix("CurlTransport cannot trust the authorities in \(file.path): ")
        }
    }

    @Test func aFileOfAuthoritiesInPEMMakesATransport() throws {
        let certificates = try TestCertificates()
        _ = try CurlTransport(trusting: certificates.authority)
    }
}
#endif
