import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
import TernTesting

/// The buffer between a streamed transfer and its reader, alone on a test clock: whatever ends
/// the stream stops its transfer, even when the transfer's task comes after the end.
@Suite(.onTestThreads) struct StreamBufferTests {
    /// A transport task that counts what it is asked.
    final class CountingTask: TransportTask, Sendable {
        let cancels = Recorder<Void>()
        let resumes = Recorder<Void>()
        func cancel() { cancels.append(()) }
        func resumeReceiving() { resumes.append(()) }
    }

    /// A request, for the attempts a test sends.
    static let request = URLRequest(url: URL(string: "https://example.com/stream")!)

    func buffer(on clock: TestClock, idleTimeout: TimeInterval = .infinity, maximumDuration: TimeInterval = .infinity) -> StreamBuffer {
        StreamBuffer(capacity: 1024, idleTimeout: idleTimeout, maximumDuration: maximumDuration, clock: clock, method: "GET", url: nil)
    }

    /// The head can open the stream, and its timers run out, before the sender attaches the
    /// transfer's task: the task is stopped as it comes, not left to run on a stream nobody
    /// reads (over a silent connection, for ever).
    @Test(arguments: ["idle", "duration"])
    func aStreamThatTimedOutBeforeItsTaskCameStopsIt(timer: String) async throws {
        let clock = TestClock()
        let stream = timer == "idle" ? buffer(on: clock, idleTimeout: 1) : buffer(on: clock, maximumDuration: 1)
        stream.open()
        stream.startTimers()
        clock.advance(by: 2)
        let task = CountingTask()
        stream.attach(task, sentAs: stream.sending(Self.request))
        #expect(task.cancels.items.count == 1)
        await #expect(throws: APIError.self) { try await stream.next() }
    }

    /// The reader gone before the task came: the task is stopped as it comes.
    @Test func aStreamCancelledBeforeItsTaskCameStopsIt() {
        let stream = buffer(on: TestClock())
        stream.open()
        stream.startTimers()
        stream.cancel()
        let task = CountingTask()
        stream.attach(task, sentAs: stream.sending(Self.request))
        #expect(task.cancels.items.count == 1)
    }

    /// A reader whose task is cancelled stops, and stops the transfer, though chunks wait: one
    /// slower than its server (a callback per line, under the thread sanitizer) always found
    /// one waiting, and the transfer ran on.
    @Test func aCancelledReaderStopsThoughChunksWait() async throws {
        let stream = buffer(on: TestClock())
        let task = CountingTask()
        stream.attach(task, sentAs: stream.sending(Self.request))
        stream.open()
        stream.startTimers()
        #expect(stream.offer(Data("a".utf8)) == .proceed)
        #expect(stream.offer(Data("b".utf8)) == .proceed)
        let reading = Task.onTestThreads {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await stream.next()
        }
        await #expect(throws: APIError.self) { try await reading.value }
        #expect(task.cancels.items.count == 1)
        #expect(stream.offer(Data("c".utf8)) == .stop)
    }

    /// A reader a little slower than the transfer, which resumes it at half capacity and so
    /// never lets the buffer empty: the buffer holds about its capacity however long it runs.
    /// The chunks it had handed over were let go only once it emptied: it held every one.
    @Test func aLaggingReaderLeavesTheBufferNearItsCapacity() async throws {
        let stream = buffer(on: TestClock())
        let task = CountingTask()
        stream.attach(task, sentAs: stream.sending(Self.request))
        stream.open()
        stream.startTimers()
        var peak = 0
        var read = 0
        for _ in 0..<1000 {
            // The transfer offers until it is paused; the reader takes until it is resumed.
            while stream.offer(Data(count: 100)) == .proceed {}
            let resumes = task.resumes.items.count
            while task.resumes.items.count == resumes { read += try await stream.next()?.count ?? 0 }
            peak = max(peak, stream.retainedBytes)
        }
        #expect(read > 400_000)
        #expect(peak <= 1024 + 100, "\(peak) bytes held")
    }

    /// A transfer that goes on after it was told to pause (FoundationNetworking's cannot
    /// pause) fills the buffer to its ceiling, no further: the stream then stops the transfer,
    /// and the reader gets every chunk that came before, then the error naming what to change.
    /// The buffer held all the server sent.
    @Test func aTransferThatDoesNotPauseEndsAtTheCeilingNotInMemory() async throws {
        let stream = buffer(on: TestClock())
        stream.open()
        stream.startTimers()
        var offered = 0
        var decision = TransferDecision.proceed
        while decision != .stop, offered < 64 << 20 {
            decision = stream.offer(Data(count: 64 << 10))
            if decision != .stop { offered += 64 << 10 }
        }
        guard decision == .stop else { Issue.record("\(offered) bytes held, and the transfer goes on"); return }
        #expect(stream.retainedBytes == offered)
        #expect(offered <= stream.ceiling)
        var read = 0
        do {
            while let chunk = try await stream.next() { read += chunk.count }
            Issue.record("the stream ended as whole")
        } catch let error as APIError {
            guard case .responseTooLarge = error else { Issue.record("expected responseTooLarge, got \(error)"); return }
            #expect("\(error)".contains("streamBufferSize"), "\(error)")
        }
        #expect(read == offered)
        #expect(stream.offer(Data(count: 1)) == .stop)
    }

    /// The reader gone, what it left unread is let go, and the stream ends cancelled.
    @Test func aReaderThatLeavesLetsItsChunksGo() async throws {
        let stream = buffer(on: TestClock())
        stream.open()
        stream.startTimers()
        for _ in 0..<8 { _ = stream.offer(Data(count: 100)) }
        stream.finish(after: nil)
        #expect(stream.retainedBytes == 800)
        stream.cancel()
        #expect(stream.retainedBytes == 0)
        await #expect(throws: APIError.self) { try await stream.next() }
    }

    /// A transfer that ended by itself leaves its task alone.
    @Test func aStreamWhoseTransferEndedLeavesItsTaskAlone() async throws {
        let stream = buffer(on: TestClock())
        stream.open()
        stream.startTimers()
        #expect(stream.offer(Data("a".utf8)) == .proceed)
        stream.finish(after: nil)
        let task = CountingTask()
        stream.attach(task, sentAs: stream.sending(Self.request))
        #expect(task.cancels.items.isEmpty)
        #expect(try await stream.next() == Data("a".utf8))
        #expect(try await stream.next() == nil)
    }

    /// A redirect or a retry sends the next attempt while the last one's task is still the
    /// buffer's: a pause the next attempt's chunks cause, and the reader lifts before its task
    /// is attached, is owed to that task. It went to the ended one, and the stream stalled
    /// (for ever, over a transport that waits for the resume).
    @Test func aResumeBeforeTheNextAttemptsTaskIsOwedToIt() async throws {
        let stream = buffer(on: TestClock())
        let ended = CountingTask()
        stream.attach(ended, sentAs: stream.sending(Self.request))
        let second = stream.sending(Self.request)
        stream.open()
        stream.startTimers()
        #expect(stream.offer(Data(count: 1024)) == .pause)
        #expect(try await stream.next()?.count == 1024)
        let next = CountingTask()
        stream.attach(next, sentAs: second)
        #expect(ended.resumes.items.isEmpty)
        #expect(next.resumes.items.count == 1)
    }

    /// The pipeline attaches an attempt's task once `send` returns, and by then the next attempt
    /// may have been sent and attached (a redirect answered on another thread): the late task is
    /// not the stream's, and neither the owed resume nor any later one goes to it.
    @Test(arguments: [false, true]) func anEarlierAttemptsLateTaskIsNotTheStreams(afterTheNext: Bool) async throws {
        let stream = buffer(on: TestClock())
        let first = stream.sending(Self.request)
        let late = CountingTask()
        let next = CountingTask()
        let second = stream.sending(Self.request)
        if afterTheNext { stream.attach(next, sentAs: second) }
        stream.attach(late, sentAs: first)
        stream.open()
        stream.startTimers()
        #expect(stream.offer(Data(count: 1024)) == .pause)
        #expect(try await stream.next()?.count == 1024)
        if !afterTheNext { stream.attach(next, sentAs: second) }
        stream.cancel()
        #expect(late.resumes.items.isEmpty && late.cancels.items.isEmpty)
        #expect(next.resumes.items.count == 1)
        #expect(next.cancels.items.count == 1)
    }
}
