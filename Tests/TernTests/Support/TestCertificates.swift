#if os(Linux)
import Foundation

/// A certificate authority made for one test, and a certificate it signed for 127.0.0.1, in a
/// directory of their own, deleted with them. `openssl s_server` presents the certificate.
final class TestCertificates: Sendable {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=Tern Test CA"], in: directory)
        try Self.openssl(["req"] + key + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"], in: directory)
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: directory.appendingPathComponent("san.ext"))
        try Self.openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                          "-out", "server.pem", "-days", "1", "-extfile", "san.ext"], in: directory)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The authority's certificate, for ``CurlTransport/init(trusting:)``.
    var authority: URL { directory.appendingPathComponent("ca.pem") }

    /// `openssl s_server` on `port`, presenting the server's certificate, with `arguments` added;
    /// standard error discarded, standard input and output as given (discarded if not).
    func server(on port: Int, _ arguments: [String], input: Pipe? = nil, output: Pipe? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", "server.pem", "-key", "server.key", "-quiet"] + arguments
        process.currentDirectoryURL = directory
        process.standardInput = input ?? FileHandle.nullDevice
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

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

/// Stops a server `openssl s_server` runs, which does not always stop on SIGTERM.
func stopServer(_ process: Process) {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}
#endif
