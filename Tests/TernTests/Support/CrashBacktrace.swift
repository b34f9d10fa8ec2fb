import Foundation

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
