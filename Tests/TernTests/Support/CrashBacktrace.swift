import Foundation
import Testing

/// A crash in an exit test's child says where it was. Swift Testing (6.3) runs the child with
/// Swift's backtracer off, dumps no core, and hands back none of a crashed child's output, so a
/// child that crashed left only "SIGSEGV" for CI to show. For a child that reports by printing
/// and exits 0 either way: a crash prints the crashing thread's frames (glibc's `backtrace`) to
/// standard output, then exits 0, and the parent, finding no report, shows them.
enum CrashBacktrace {
    private typealias Backtrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>, Int32) -> Int32
    private typealias PrintSymbols = @convention(c) (UnsafePointer<UnsafeMutableRawPointer?>, Int32, Int32) -> Void

    // Looked up before any signal: `dlsym` is not safe in a handler, a read of these is.
    nonisolated(unsafe) private static var backtrace: Backtrace?
    nonisolated(unsafe) private static var printSymbols: PrintSymbols?

    /// Whether the child printed that Dispatch stopped it (SIGILL in libdispatch: its thread
    /// pool's monitor crashes when it cannot open a file) where `excusable`; if so, records that
    /// as a known issue, `why`.
    static func excusesDispatchStopping(_ printed: String, where excusable: Bool, _ why: Comment,
                                        sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard excusable, printed.split(separator: "\n").contains("crashed, signal 04"), printed.contains("libdispatch.so") else { return false }
        withKnownIssue(why, isIntermittent: true) { Issue.record("\(printed)", sourceLocation: sourceLocation) }
        return true
    }

    /// Whether Dispatch stopped a child over URLSession under a low descriptor limit, recorded
    /// as a known issue if so: FoundationNetworking's sockets keep no reserve and can take every
    /// descriptor, out of Tern's reach (Security.md). Over libcurl it is never excused.
    static func excusesDispatchStoppingAChildOverURLSession(_ printed: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        excusesDispatchStopping(printed, where: !TestTransport.isCurl,
                                "FoundationNetworking's sockets took every descriptor, and Dispatch's monitor stopped the process",
                                sourceLocation: sourceLocation)
    }

    /// In a child process: on a crash, print where to standard output and exit 0.
    static func printOnCrash() {
        let process = UnsafeMutableRawPointer(bitPattern: 0)
        guard let backtrace = dlsym(process, "backtrace"), let printSymbols = dlsym(process, "backtrace_symbols_fd") else { return }
        Self.backtrace = unsafeBitCast(backtrace, to: Backtrace.self)
        Self.printSymbols = unsafeBitCast(printSymbols, to: PrintSymbols.self)
        for crash in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT] {
            signal(crash) { number in
                // Nothing allocated: the crash may have come inside `malloc`.
                let said: StaticString = "crashed, signal "
                _ = write(STDOUT_FILENO, said.utf8Start, said.utf8CodeUnitCount)
                var digits = (UInt8(ascii: "0") + UInt8(number / 10), UInt8(ascii: "0") + UInt8(number % 10), UInt8(ascii: "\n"))
                _ = withUnsafeBytes(of: &digits) { write(STDOUT_FILENO, $0.baseAddress, 3) }
                withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 64) { frames in
                    let count = CrashBacktrace.backtrace?(frames.baseAddress!, 64) ?? 0
                    CrashBacktrace.printSymbols?(frames.baseAddress!, count, STDOUT_FILENO)
                }
                _exit(0)
            }
        }
    }
}
