import Foundation
import Testing

/// Threads for the tests' own code, as many as are busy (a thread of its own starts them): a
/// test that blocks one (writing a large file, running `openssl`, waiting on a semaphore, or
/// Swift Testing reading an exit test's child) holds no other test back.
///
/// On Linux the concurrency pool has a thread per core and never adds one for a thread that
/// blocks: on two cores, one exit test blocked both for as long as its child ran (two of Swift
/// Testing's reads), as did two tests running `openssl`, and the tests beside them stood still.
/// A test sleeping 50 ms at a time through a whole run overslept by 5 to 10 s at once, 12 to
/// 17 s in all; in CI, 20 s uploads timed out and a plugin's `willSend` waited 30 s. On these
/// threads it oversleeps by about a second at most, and the suite passes beside two busy loops
/// and on one core (three runs of three), where time limits passed and six tests failed. A pool
/// of fixed width (4, then 16) that adds a thread when jobs wait, tried after, let the probe
/// oversleep 3 to 6 s. Tern's own code never blocks the pool.
final class TestThreads: TaskExecutor, @unchecked Sendable {
    static let shared = TestThreads()

    private let condition = NSCondition()
    /// Jobs not yet taken by a thread.
    private var jobs: [UnownedJob] = []
    /// Threads waiting for a job, and threads asked for and not yet running.
    private var waiting = 0
    private var coming = 0
    /// Wakes the thread that starts threads. A job is often enqueued from a thread that must
    /// not wait (libcurl's, resuming a test with its answer), and starting a thread there held
    /// it 375 ms once, on glibc's lock of thread stacks: a stream's idle timeout passed between
    /// its head and the body that had come with it.
    private let threadWanted = DispatchSemaphore(value: 0)

    private init() {
        let starter = Thread { [self] in
            while true {
                threadWanted.wait()
                let thread = Thread { [self] in work() }
                thread.name = "tern.test"
                thread.start()
            }
        }
        starter.name = "tern.test.starter"
        starter.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // A waiting or coming thread for each job not yet taken, or one more thread.
        let wantsThread = jobs.count > waiting + coming
        if wantsThread { coming += 1 } else if waiting > 0 { condition.signal() }
        condition.unlock()
        if wantsThread { threadWanted.signal() }
    }

    /// Whether the caller runs on one of these threads.
    static var isCurrent: Bool { pthread_getspecific(marker) != nil }

    /// Set on each of these threads, for ``isCurrent``.
    private static let marker: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs jobs until none comes for 10 s.
    private func work() {
        pthread_setspecific(Self.marker, UnsafeRawPointer(bitPattern: 1))
        condition.lock()
        coming -= 1
        while true {
            if jobs.isEmpty {
                waiting += 1
                let woken = condition.wait(until: Date().addingTimeInterval(10))
                waiting -= 1
                if !woken, jobs.isEmpty {
                    condition.unlock()
                    return
                }
                continue
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
    }
}

/// Runs a suite's tests, and the tasks they make in structure (an exit test's readers among
/// them), on ``TestThreads``.
struct OnTestThreads: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(TestThreads.shared) { try await function() }
    }
}

extension Trait where Self == OnTestThreads {
    /// Each test on threads of its own, so that one that blocks holds no other back.
    static var onTestThreads: Self { OnTestThreads() }
}

extension Task where Failure == any Error {
    /// An unstructured task on ``TestThreads``, where the test that makes it runs. A plain
    /// `Task {}` takes no executor preference with it and runs on the concurrency pool, where
    /// under the thread sanitizer a new task was seen to wait 6 s for a thread. (A stream that
    /// asked nothing of its stub in 30 s, seen in CI and once blamed on this, had been cancelled
    /// by the pipeline: a head that came before the transport's task; fixed.)
    @discardableResult
    static func onTestThreads(_ operation: sending @escaping () async throws -> Success) -> Task<Success, any Error> {
        Task(executorPreference: TestThreads.shared, operation: operation)
    }
}

extension Task where Failure == Never {
    /// The same, for work that cannot fail.
    @discardableResult
    static func onTestThreads(_ operation: sending @escaping () async -> Success) -> Task<Success, Never> {
        Task(executorPreference: TestThreads.shared, operation: operation)
    }
}
