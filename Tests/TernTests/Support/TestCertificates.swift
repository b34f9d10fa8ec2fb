#if os(Linux)
import Foundation

/// A certificate authority made for one test, and a certificate it signed for 127.0.0.1, in a
/// directory of their own, deleted with them. ``TLSRelay`` presents the certificate.
///
/// The directories are in one of the process (`tern-tls-<pid>` in the temporary directory),
/// removed as the process exits: one a static holds is never deleted with it. Those of
/// processes that ended without (a crash, a kill) are removed by the next process to make one.
final class TestCertificates: Sendable {
    let directory: URL

    /// This process's directory, made empty, once earlier processes' are gone.
    static let root: URL = {
        let temporary = FileManager.default.temporaryDirectory
        removeAbandoned(in: temporary)
        let root = temporary.appendingPathComponent("tern-tls-\(getpid())")
        // A process long gone that had this ID left it.
        try? FileManager.default.removeItem(at: root)
        atexit {
            try? FileManager.default.removeItem(at: TestCertificates.root)
        }
        return root
    }()

    /// Removes the directories of processes that have ended: `tern-tls-<pid>` whose process is
    /// gone, and, as they were once made, `tern-tls-<UUID>` untouched for an hour.
    static func removeAbandoned(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("tern-tls-") {
            let url = temporary.appendingPathComponent(name)
            if let pid = pid_t(name.dropFirst("tern-tls-".count)) {
                guard pid != getpid(), kill(pid, 0) == -1, errno == ESRCH else { continue }
            } else {
                let modified = (try? url.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
                guard let modified, modified < Date().addingTimeInterval(-3600) else { continue }
            }
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// - Parameters:
    ///   - names: The server certificate's subject alternative names: 127.0.0.1 unless given.
    ///   - days: How long it is valid from now; -1 makes one that expired a day ago.
    init(names: String = "IP:127.0.0.1", days: Int = 1) throws {
        directory = Self.root.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let file = { (name: String) in self.directory.appendingPathComponent(name).path }
        try Self.openssl(["req", "-x509"] + key + ["-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "1", "-subj", "/CN=Tern Test CA"])
        try Self.openssl(["req"] + key + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName=\(names)\n".utf8).write(to: directory.appendingPathComponent("san.ext"))
        try Self.openssl(["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial",
                          "-out", file("server.pem"), "-days", "\(days)", "-extfile", file("san.ext")])
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
        // Nothing else of this process: a connection openssl inherited stayed open until it ended.
        // glibc 2.34's closefrom action, which Swift's Glibc does not import.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        }
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
}
#endif
