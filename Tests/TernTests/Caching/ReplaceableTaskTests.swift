import Testing
@testable import TernTransport

/// The cache's revalidation task, which a second exchange takes over when the server's `304`
/// confirms another response: what the pipeline asks of it while no exchange's task is there
/// (the first's `send` has not returned; the second's is being sent) waits for the next task.
@Suite(.onTestThreads) struct ReplaceableTaskTests {
    typealias CountingTask = StreamBufferTests.CountingTask

    /// A download's file that waited for a descriptor resumes the transfer while the second
    /// exchange is being sent: the resume went to the first, which had ended, and the download
    /// waited for its timeout.
    @Test func aResumeWhileTheSecondIsSentIsTheSeconds() {
        let task = ReplaceableTask()
        let first = CountingTask()
        let second = CountingTask()
        task.begin(first)
        task.replace {
            task.resumeReceiving()
            return second
        }
        #expect(first.resumes.items.isEmpty)
        #expect(second.resumes.items.count == 1)
        task.resumeReceiving()
        #expect(second.resumes.items.count == 2)
    }

    /// A resume or a cancel before the first's `send` returned is the first's, once it does;
    /// a cancel while the second is sent, the second's.
    @Test func whatComesBeforeATaskIsGivenToIt() {
        let resumed = ReplaceableTask()
        resumed.resumeReceiving()
        let first = CountingTask()
        resumed.begin(first)
        #expect(first.resumes.items.count == 1)

        let cancelled = ReplaceableTask()
        let second = CountingTask()
        cancelled.begin(CountingTask())
        cancelled.replace {
            cancelled.cancel()
            return second
        }
        #expect(second.cancels.items.count == 1)
        #expect(second.resumes.items.isEmpty)
    }
}
