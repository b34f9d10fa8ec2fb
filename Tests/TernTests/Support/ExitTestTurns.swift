import Foundation
import Testing

/// Whether this process runs under the thread sanitizer, whose runtime it then has.
let isThreadSanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

extension Trait where Self == ConditionTrait {
    /// For a test whose work runs in a child process (an exit test): not under the thread
    /// sanitizer, where each child (thousands of requests, some of them) runs several times
    /// slower, one at a time, past the run's budget. The same tests run unsanitized on both
    /// transports.
    static var exitTest: Self {
        .enabled(if: !isThreadSanitized, "a sanitized child runs several times slower; these run unsanitized on both transports")
    }
}

/// Exit tests, one at a time: several children of thousands of requests each, at once, took
/// both cores from every other test. Swift Testing (6.3) blocks two threads while a child runs
/// (reading what it reports and what it prints); they are ``TestThreads``, not the concurrency
/// pool's, whose two threads that held (see `TestThreads.swift`). Waiting for a turn blocks no
/// thread.
actor ExitTestTurns {
    static let shared = ExitTestTurns()

    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `exitTest` once no other exit test runs.
    @discardableResult
    static func inTurn<Outcome>(_ exitTest: () async -> Outcome) async -> Outcome {
        await shared.take()
        let result = await exitTest()
        await shared.give()
        return result
    }

    private func take() async {
        guard isTaken else {
            isTaken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty { isTaken = false } else { waiting.removeFirst().resume() }
    }
}
