import Foundation
import TernCore

/// Counts, on a thread of its own, how often the process has no descriptor free (tried every
/// 0.2 ms): libdispatch's thread pool monitor stops the process when it cannot open a file then.
final class DescriptorSampler: Sendable {
    private let state = Locked((times: 0, done: false))

    /// Starts sampling.
    init() {
        Thread { [self] in
            while !state.withLock({ $0.done }) {
                let probe = fcntl(STDERR_FILENO, F_DUPFD, 0)
                if probe < 0 { state.withLock { $0.times += 1 } } else { close(probe) }
                usleep(200)
            }
        }.start()
    }

    /// Stops sampling; returns how many times no descriptor was free.
    func stop() -> Int {
        state.withLock { state in
            state.done = true
            return state.times
        }
    }
}
