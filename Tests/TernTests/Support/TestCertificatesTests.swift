#if os(Linux)
import Foundation
import Testing

/// The test certificates' directories do not outlive the process: they are in one of its own,
/// removed as it exits (a static's certificates are never deinitialised), and those of
/// processes that ended without removing theirs are removed by the next.
/// Three minutes: an exit test waits its turn behind every other (`ExitTestTurns`).
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct TestCertificatesTests {
    @Test(.timeLimit(.minutes(3))) func certificatesAreMadeInTheProcesssOwnDirectory() throws {
        let certificates = try TestCertificates()
        #expect(certificates.directory.deletingLastPathComponent().path == TestCertificates.root.path)
        #expect(TestCertificates.root.lastPathComponent == "tern-tls-\(getpid())")
    }

    #if compiler(>=6.3)
    /// Certificates still held when the process exits, as a static's are.
    @Test(.exitTest) func certificatesHeldAtExitAreRemoved() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let certificates = try TestCertificates()
                print(certificates.directory.path)
                withExtendedLifetime(certificates) { exit(0) }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let made = URL(fileURLWithPath: printed)
        #expect(made.deletingLastPathComponent().lastPathComponent.hasPrefix("tern-tls-"), "\(printed)")
        #expect(!FileManager.default.fileExists(atPath: made.path), "\(printed)")
        #expect(!FileManager.default.fileExists(atPath: made.deletingLastPathComponent().path), "\(printed)")
    }
    #endif

    @Test(.timeLimit(.minutes(3))) func theDirectoriesOfEndedProcessesAreRemovedAndNoOthers() throws {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("tern-abandoned-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temporary) }
        let ended = try Self.endedProcess()
        let (old, recent) = ("tern-tls-\(UUID().uuidString)", "tern-tls-\(UUID().uuidString)")
        for name in ["tern-tls-\(ended)", "tern-tls-\(getpid())", "tern-tls-1", old, recent] {
            try FileManager.default.createDirectory(at: temporary.appendingPathComponent(name + "/certificates"), withIntermediateDirectories: true)
        }
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: temporary.appendingPathComponent(old).path)
        TestCertificates.removeAbandoned(in: temporary)
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary.path).sorted()
        // This process's, init's (alive), and the one made as this test began.
        #expect(left == ["tern-tls-\(getpid())", "tern-tls-1", recent].sorted())
    }

    /// The ID of a process that has ended.
    private static func endedProcess() throws -> pid_t {
        let argv = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { throw TestError() }
        var status: Int32 = 0
        // ECHILD: reaped by another (an exit test's monitor); ended either way.
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        return pid
    }
}
#endif
