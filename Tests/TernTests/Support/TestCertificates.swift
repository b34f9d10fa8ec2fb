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
        let file = { (name: String) in self.directory.appendingPathComponent(name).path }
        try Self.openssl(["req", "-x509"] + key + ["-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "1", "-subj", "/CN=Tern Test CA"])
        try Self.openssl(["req"] + key + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: directory.appendingPathComponent("san.ext"))
        try Self.openssl(["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial",
                          "-out", file("server.pem"), "-days", "1", "-extfile", file("san.ext")])
        // Written whole, whoever reaped openssl (see openssl(_:)).
        guard FileManager.default.fileExists(atPath: file("server.pem")) else { throw TestError(code: -1) }
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The pin of a key file of this directory (`server.key`, `ca.key`): `sha256/` and the
    /// Base64 of the SHA-256 of its public key's DER (its SubjectPublicKeyInfo), made by openssl.
    func pin(ofKey name: String) throws -> String {
        let file = { (name: String) in self.directory.appendingPathComponent(name).path }
        try Self.openssl(["pkey", "-in", file(name), "-pubout", "-outform", "DER", "-out", file(name + ".spki")])
        try Self.openssl(["dgst", "-sha256", "-binary", "-out", file(name + ".sha256"), file(name + ".spki")])
        let hash = try Data(contentsOf: directory.appendingPathComponent(name + ".sha256"))
        guard hash.count == 32 else { throw TestError(code: -2) }
        return "sha256/" + hash.base64EncodedString()
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

    /// Runs `openssl` with `arguments` (paths absolute), its output discarded, and waits for it.
    ///
    /// Not through `Process`: Swift Testing's exit tests reap child processes that are not theirs
    /// now and then, and `Process.waitUntilExit()` then spins at full speed for ever (seen in a
    /// release run: both cores, every other test past its time limit). `waitpid` on the child's
    /// own ID returns either way; a child reaped by another is done.
    static func openssl(_ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = (["/usr/bin/openssl"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/openssl", &actions, nil, argv, environ)
        guard spawned == 0 else { throw TestError(code: Int(spawned)) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return }   // ECHILD: reaped by another
        }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { throw TestError(code: Int(status)) }
    }

    /// A port for `s_server`, free now, and one no other test's server or connection is given
    /// before `s_server` binds it: below the range the system hands out for port 0 and for
    /// outgoing connections. (The kernel's pick, released at once, was seen handed to another
    /// test's server first: requests then went to that server, and failed.)
    static func freePort() throws -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) } ?? []
        let handedOut = range.count == 2 ? range[0] : 32768
        for _ in 0..<200 {
            let port = Int.random(in: 10_000..<max(handedOut, 10_001))
            if isFree(port) { return port }
        }
        throw TestError(code: Int(EADDRINUSE))
    }

    /// Whether a server could listen on `port` now.
    private static func isFree(_ port: Int) -> Bool {
        onLoopback(port) { bind($0, $1, $2) == 0 }
    }

    /// Whether something listens on `port` now: a connection made and closed at once, having
    /// sent nothing.
    static func accepts(_ port: Int) -> Bool {
        onLoopback(port) { connect($0, $1, $2) == 0 }
    }

    /// `call` with a new TCP socket and 127.0.0.1:`port`; the socket closed after.
    private static func onLoopback(_ port: Int, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}

/// Stops a server `openssl s_server` runs, which does not always stop on SIGTERM, and waits a
/// while for it to end (not with `waitUntilExit()`, which spins for ever once another reaped
/// the child: see ``TestCertificates/openssl(_:)``).
func stopServer(_ process: Process) {
    kill(process.processIdentifier, SIGKILL)
    let deadline = Date().addingTimeInterval(5)
    while process.isRunning, Date() < deadline { usleep(10_000) }
}
#endif
