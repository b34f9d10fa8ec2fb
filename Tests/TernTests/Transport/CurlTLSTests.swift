#if os(Linux)
import Foundation
import Testing
import Tern

/// TLS over libcurl against a local HTTPS server (`openssl s_server`) with a certificate from a
/// test CA made for the run: trusted when the transport is told the CA, refused otherwise.
@Suite(.timeLimit(.minutes(1))) struct CurlTLSTests {
    /// A CA, a certificate it signed for 127.0.0.1, and `openssl s_server` presenting it.
    final class HTTPSServer: Sendable {
        let directory: URL
        let port: Int
        let process: Process

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            try Self.openssl(["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=Tern Test CA"], in: directory)
            try Self.openssl(["req"] + key + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"], in: directory)
            try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: directory.appendingPathComponent("san.ext"))
            try Self.openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                              "-out", "server.pem", "-days", "1", "-extfile", "san.ext"], in: directory)
            port = try Self.freePort()
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", "server.pem", "-key", "server.key", "-www", "-quiet"]
            process.currentDirectoryURL = directory
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        deinit {
            // s_server does not always stop on SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }

        var url: String { "https://127.0.0.1:\(port)/" }
        var authority: URL { directory.appendingPathComponent("ca.pem") }

        static func openssl(_ arguments: [String], in directory: URL) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = directory
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw TestError(code: Int(process.terminationStatus)) }
        }

        /// A port nothing listens on now: the kernel's pick, released at once.
        static func freePort() throws -> Int {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
            }
            guard bound else { throw TestError(code: Int(errno)) }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    /// The status page, once the server listens.
    func get(_ server: HTTPSServer, over transport: CurlTransport) async -> Result<String, any Error> {
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        for _ in 0..<100 {
            let result = await (api.request(route: .get(server.url)) as Promise<String>).result
            // Not listening yet: the key pair and s_server take a moment.
            if case .failure(APIError.transportFailed(let failure)) = result, failure.urlError?.code == .cannotConnectToHost {
                try? await Task.sleep(nanoseconds: 50_000_000)
                continue
            }
            return result
        }
        return .failure(TestError())
    }

    @Test func aPeerSignedByTheTrustedAuthorityIsAccepted() async throws {
        let server = try HTTPSServer()
        let page = try await get(server, over: try CurlTransport(trusting: server.authority)).get()
        #expect(page.contains("s_server"))
    }

    @Test func aPeerTheSystemDoesNotTrustFailsWithATypedError() async throws {
        let server = try HTTPSServer()
        let result = await get(server, over: try CurlTransport())
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .serverCertificateUntrusted)
        #expect("\(failure)".contains("certificate"))
    }
}
#endif
