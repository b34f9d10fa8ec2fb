import Dispatch

#if os(Linux)
/// Runs tasks on a ``CurlTransport``'s event thread: a task that prefers it sends each request
/// and resumes with each answer on the thread that moves the bytes, with no hand-off to another
/// thread in between.
///
/// Jobs run between transfers, on the one thread that drives every transfer of the transport:
/// a job that blocks or computes for long holds them all back. Once the transport is released,
/// jobs run on the global concurrent queue.
final class CurlTaskExecutor: TaskExecutor {
    private let loop: CurlLoop

    init(loop: CurlLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let work: @Sendable () -> Void = { job.runSynchronously(on: executor) }
        if !loop.schedule(work) { DispatchQueue.global().async(execute: work) }
    }
}
#endif
