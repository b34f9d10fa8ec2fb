#if os(Linux)
import Foundation
import Glibc

/// A child process a test stops (`SIGSTOP`) at a moment of its choosing, as a debugger's
/// breakpoint or Ctrl-Z stops one: a writer in the middle of its write, holding a lock.
enum StoppedProcess {
    /// The process id the child wrote to `pidFile` once it ran (it may wait its turn behind other
    /// exit tests); `0` if it did not within 90 s.
    static func pid(writtenTo pidFile: URL) async throws -> pid_t {
        var pid: pid_t = 0
        for _ in 0..<900 where pid == 0 {
            pid = (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap { pid_t($0) } ?? 0
            if pid == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        return pid
    }

    /// Stops `pid` again and again, at moments a little apart, until `isHolding` says, while it
    /// is stopped, that it holds what the test wants held; lets it go on otherwise. Whether it
    /// is stopped so.
    static func stop(_ pid: pid_t, when isHolding: () -> Bool) -> Bool {
        for attempt in 0..<2000 {
            kill(pid, SIGSTOP)
            for _ in 0..<200 where !isStopped(pid) { usleep(1_000) }
            if isHolding() { return true }
            kill(pid, SIGCONT)
            usleep(UInt32(2_000 + (attempt % 7) * 1_300))
        }
        return false
    }

    /// Whether process `pid` is stopped (state `T` in `/proc/<pid>/stat`).
    static func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
    }

    /// Whether someone holds the `flock` on the file or folder at `path`.
    static func isLocked(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(descriptor, LOCK_UN)
        return false
    }
}
#endif
