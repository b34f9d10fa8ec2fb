import Foundation
import Testing

/// Whether this process runs under the thread sanitizer, whose runtime it then has.
let isThreadSanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

extension Trait where Self == ConditionTrait {
    /// For a test whose work runs in a child process (an exit test): not under the thread
    /// sanitizer, where a child takes long enough that the pool threads Swift Testing blocks
    /// while it waits (one for what the child reports, one for its output) held every other test
    /// past its time limit on two cores. The same tests run unsanitized on both transports.
    static var exitTest: Self {
        .enabled(if: !isThreadSanitized, "an exit test's child holds the concurrency pool's threads while it runs")
    }
}

/// Exit tests, one at a time. Swift Testing (6.3) waits for an exit test's child process on
/// threads of the concurrency pool, which it blocks until the child ends; the pool has a thread
/// per core, and on two cores two exit tests at once held every other test (their awaits, their
/// `eventually`) until a child ended: requests timed out, time limits passed. Waiting for a turn
/// blocks no thread.
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
