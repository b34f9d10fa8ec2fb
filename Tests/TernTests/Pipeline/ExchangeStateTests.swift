import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// An exchange's state on its own, without a transport: what each of the transport's events
/// does to it, in order and out of it.
@Suite(.onTestThreads) struct ExchangeStateTests {
    final class Task: TransportTask {
        func cancel() {}
    }

    func head(_ headers: HTTPHeaders = [:], status: Int = 200) -> ResponseHead {
        ResponseHead(url: URL(string: "https://example.com/a")!, statusCode: status, httpVersion: "1.1", headers: headers)!
    }

    /// An exchange whose head came and was taken for memory within `limit`.
    func answered(_ headers: HTTPHeaders = [:], limit: Int? = nil) -> ExchangeState {
        var state = ExchangeState(attempt: 1)
        _ = state.headCame(judgedElsewhere: false)
        _ = state.accept(head(headers), into: .memory, limit: limit, fileLimit: nil)
        return state
    }

    func isBadServerResponse(_ error: (any Error)?) -> Bool {
        (error as? URLError)?.code == .badServerResponse
    }

    @Test func theBodyIsKeptAndItsProgressCountsTheDeclaredLength() throws {
        var state = ExchangeState(attempt: 1)
        let isFirst = state.headCame(judgedElsewhere: false)
        #expect(isFirst)
        guard case .kept(let started?) = state.accept(head(["Content-Length": "8"]), into: .memory, limit: nil, fileLimit: nil)
        else { Issue.record("not accepted with progress"); return }
        #expect(started.completedBytes == 0 && started.totalBytes == 8)
        guard case .kept(let progress?) = state.take(Data("abcd".utf8), limit: nil, file: nil) else { Issue.record("not kept"); return }
        #expect(progress.completedBytes == 4 && progress.totalBytes == 8)
        _ = state.take(Data("efgh".utf8), limit: nil, file: nil)
        let end = state.endCame(nil)
        let ended = try #require(end)
        #expect(ended.body == Data("abcdefgh".utf8) && ended.stopped == nil)
    }

    /// The idle watch times an exchange out after four looks in a row that saw nothing move:
    /// a head, a chunk, bytes sent, or waiting for a connection start the count again.
    @Test func theIdleWatchCountsQuietLooks() {
        var state = ExchangeState(attempt: 1)
        func looks(_ count: Int, waiting: Bool = false) -> [IdleWatch.Look] {
            (0..<count).map { _ in state.lookForProgress(waitingForConnection: waiting, timeout: 2) }
        }
        // The first look sees where the exchange is; three more see it unchanged.
        #expect(looks(4) == [.goOn, .goOn, .goOn, .goOn])
        #expect(looks(3, waiting: true) == [.goOn, .goOn, .goOn])
        #expect(looks(3) == [.goOn, .goOn, .goOn])
        state.sent = 10
        #expect(looks(4) == [.goOn, .goOn, .goOn, .goOn])
        _ = state.headCame(judgedElsewhere: false)
        _ = state.accept(head(), into: .memory, limit: nil, fileLimit: nil)
        #expect(looks(4) == [.goOn, .goOn, .goOn, .goOn])
        _ = state.take(Data("ab".utf8), limit: nil, file: nil)
        #expect(looks(5) == [.goOn, .goOn, .goOn, .goOn, .timedOut])
        #expect((state.stopped as? URLError)?.code == .timedOut)
        #expect(state.stopped?.localizedDescription.contains("2.0 s with no byte sent or received") == true)
        _ = state.endCame(nil)
        #expect(looks(1) == [.over])
    }

    @Test func aSecondHeadFailsTheExchange() {
        var state = answered()
        let isFirst = state.headCame(judgedElsewhere: false)
        #expect(!isFirst)
        #expect(isBadServerResponse(state.stopped))
    }

    @Test func aChunkBeforeTheHeadFailsTheExchange() {
        var state = ExchangeState(attempt: 1)
        guard case .stop = state.take(Data("early".utf8), limit: nil, file: nil) else { Issue.record("taken"); return }
        #expect(isBadServerResponse(state.stopped))
        #expect(state.body.isEmpty)
    }

    @Test func nothingAfterTheEndIsTakenOrFailsIt() throws {
        var state = answered()
        _ = state.take(Data("body".utf8), limit: nil, file: nil)
        let end = state.endCame(nil)
        let ended = try #require(end)
        #expect(ended.body == Data("body".utf8))
        // What the transport reports after the end belongs to nothing: no head, no chunk, no
        // second end, and no failure recorded for any of them.
        let lateHead = state.headCame(judgedElsewhere: false)
        #expect(!lateHead)
        guard case .stop = state.take(Data("late".utf8), limit: nil, file: nil) else { Issue.record("taken"); return }
        let secondEnd = state.endCame(URLError(.networkConnectionLost))
        #expect(secondEnd == nil)
        #expect(state.stopped == nil && state.body.isEmpty && state.hasEnded)
    }

    @Test func aDeclaredLengthOverTheLimitStopsAtTheHead() {
        var state = ExchangeState(attempt: 1)
        _ = state.headCame(judgedElsewhere: false)
        guard case .stop = state.accept(head(["Content-Length": "100"]), into: .memory, limit: 10, fileLimit: nil)
        else { Issue.record("accepted over the limit"); return }
        #expect((state.stopped as? BodyLimitExceeded)?.declaredLength == 100)
        // An encoded length says nothing of the decoded body's.
        var encoded = ExchangeState(attempt: 1)
        _ = encoded.headCame(judgedElsewhere: false)
        guard case .kept = encoded.accept(head(["Content-Length": "100", "Content-Encoding": "gzip"]), into: .memory, limit: 10, fileLimit: nil)
        else { Issue.record("an encoded length stopped the exchange"); return }
    }

    /// A redirect's, a refused attempt's or an error's body is kept but reports no progress: it
    /// is not the answer's, and its 1.0 would come before the answer's first byte.
    @Test(arguments: [301, 401, 503])
    func aBodyThatIsNotASuccessReportsNoProgress(status: Int) {
        var state = ExchangeState(attempt: 1)
        _ = state.headCame(judgedElsewhere: false)
        guard case .kept(nil) = state.accept(head(["Content-Length": "4"], status: status), into: .memory, limit: nil, fileLimit: nil)
        else { Issue.record("not accepted, or with progress"); return }
        guard case .kept(nil) = state.take(Data("nope".utf8), limit: nil, file: nil) else { Issue.record("not kept, or with progress"); return }
        #expect(state.body == Data("nope".utf8))
    }

    @Test func theChunkThatPassesTheLimitStopsTheTransferAndDropsTheBody() {
        var state = answered(limit: 4)
        guard case .kept = state.take(Data("abc".utf8), limit: 4, file: nil) else { Issue.record("not kept"); return }
        guard case .stop = state.take(Data("de".utf8), limit: 4, file: nil) else { Issue.record("taken past the limit"); return }
        #expect((state.stopped as? BodyLimitExceeded)?.receivedBytes == 5)
        #expect(state.body.isEmpty)
    }

    @Test func whileTheHeadIsJudgedElsewhereChunksAndTheFirstEndWait() throws {
        var state = ExchangeState(attempt: 1)
        let isFirst = state.headCame(judgedElsewhere: true)
        #expect(isFirst)
        let held = state.hold(Data("one".utf8), file: nil, stream: nil)
        #expect(held == .proceed)
        let firstEnd = state.endCame(nil)
        #expect(firstEnd == nil)
        // A second end, and a chunk after the first, belong to nothing.
        let secondEnd = state.endCame(URLError(.networkConnectionLost))
        #expect(secondEnd == nil)
        let late = state.hold(Data("late".utf8), file: nil, stream: nil)
        #expect(late == .stop)
        let first = state.takeHeld()
        #expect(first.chunks == [Data("one".utf8)])
        #expect(first.end == nil)
        let second = state.takeHeld()
        #expect(second.chunks.isEmpty)
        let end = try #require(second.end)
        #expect(end == nil)   // the first end: no error
        // Judging is over: the end is taken at once, and nothing is held any more.
        let more = state.hold(Data("more".utf8), file: nil, stream: nil)
        #expect(more == nil)
    }

    /// From a transport that cannot hold the transfer back, what comes while the download's
    /// file waits for a descriptor is held up to a bound; past it the transfer stops, and the
    /// download fails with why. A streamed head judged elsewhere holds what comes up to the
    /// stream's ceiling; past it the stream ends as one whose reader fell behind.
    @Test func whileTheFileWaitsWhatIsHeldIsBounded() {
        let file = DownloadFile(destination: URL(fileURLWithPath: "/tmp/tern-never-written"), replacing: false, resumingFrom: nil)
        let piece = Data(count: 1 << 20)
        var waiting = ExchangeState(attempt: 1)
        _ = waiting.headCame(judgedElsewhere: false)
        waiting.holdWhileTheFileWaits()
        let decisions = (0...ExchangeState.mostHeldWhileAFileWaits >> 20).map { _ in waiting.hold(piece, file: file, stream: nil) }
        #expect(decisions == Array(repeating: .proceed, count: ExchangeState.mostHeldWhileAFileWaits >> 20) + [.stop])
        guard case .fileFailed(let failure)? = waiting.stopped as? APIError else { Issue.record("stopped with \(String(describing: waiting.stopped))"); return }
        #expect((failure.underlying as? POSIXError)?.code == .EMFILE)
        var judged = ExchangeState(attempt: 1)
        _ = judged.headCame(judgedElsewhere: true)
        let stream = StreamBuffer(capacity: 1024, idleTimeout: 60, maximumDuration: 60, clock: SystemClock(), method: "GET", url: nil)
        let held = (0...stream.ceiling >> 20).map { _ in judged.hold(piece, file: nil, stream: stream) }
        #expect(held == Array(repeating: .proceed, count: stream.ceiling >> 20) + [.stop])
        guard case .responseTooLarge(let failure)? = judged.stopped as? APIError else { Issue.record("stopped with \(String(describing: judged.stopped))"); return }
        #expect(failure.limit == stream.ceiling)
    }

    @Test func aDecisionMadeBeforeTheTaskCameWaitsForIt() {
        var state = ExchangeState(attempt: 1)
        let unattached = state.owe(.stop)
        #expect(unattached == nil)
        let owed = state.attach(Task())
        #expect(owed == .stop)
        let attached = state.owe(.proceed)
        #expect(attached != nil)
        let owedAgain = state.attach(Task())
        #expect(owedAgain == nil)
    }

    @Test func anEndedExchangeKeepsNoTask() {
        var state = answered()
        _ = state.endCame(nil)
        _ = state.attach(Task())
        #expect(state.task == nil)
    }

    @Test func aRestartStopsTheExchangeAtItsHead() {
        var state = ExchangeState(attempt: 1)
        _ = state.headCame(judgedElsewhere: false)
        guard case .stop = state.accept(head(), into: .restart, limit: nil, fileLimit: nil) else { Issue.record("accepted"); return }
        #expect(state.stopped is DownloadRestart)
    }
}
