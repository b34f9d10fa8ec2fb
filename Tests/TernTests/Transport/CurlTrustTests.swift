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
}
#endif
