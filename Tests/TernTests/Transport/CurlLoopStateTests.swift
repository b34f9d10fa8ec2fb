#if os(Linux)
import Testing
@testable import TernTransport

/// The libcurl loop's bookkeeping as a value: what each event asks of libcurl, and that every
/// exchange ends exactly once, whatever the order of events.
@Suite(.onTestThreads) struct CurlLoopStateTests {
    final class Job: CustomStringConvertible {
        let name: String
        init(_ name: String) { self.name = name }
        var description: String { name }
    }

    typealias State = CurlLoopState<Job>
    let origin = "127.0.0.1:8080"

    /// The actions as text, to compare whole sequences.
    func describe(_ actions: [State.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .add(let job): "add \(job)"
            case .remove(let job): "remove \(job)"
            case .addOnNewConnection(let job): "add \(job) on a new connection"
            case .complete(let job, let code): "complete \(job) \(code.map(String.init) ?? "cancelled")"
            case .addAgain(let job): "add \(job) again"
            case .limitConnections(let limit): limit.map { "limit \($0)" } ?? "no limit"
            }
        }
    }

    @Test func anExchangeRunsAndEndsOnce() {
        var state = State(connectionsPerHost: 8)
        let job = Job("a")
        #expect(describe(state.start(job, origin: origin)) == ["add a"])
        #expect(state.runningCount == 1)
        #expect(describe(state.finished(job, origin: origin, code: 0, mayRunAgain: false)) == ["remove a", "complete a 0"])
        #expect(state.runningCount == 0)
        // Anything after the end does nothing.
        #expect(state.cancel(job, origin: origin).isEmpty)
        #expect(state.finished(job, origin: origin, code: 0, mayRunAgain: false).isEmpty)
        #expect(state.refused(job, origin: origin).isEmpty)
    }

    /// A timeout cancels an upload libcurl is running: it is taken back and ends as cancelled
    /// at once, and the request waiting for its connection takes its place.
    @Test func aTimeoutDuringAnUploadEndsItOnceAndTheNextWaitingRuns() {
        var state = State(connectionsPerHost: 1)
        let (upload, waiting) = (Job("upload"), Job("waiting"))
        #expect(describe(state.start(upload, origin: origin)) == ["add upload"])
        #expect(state.start(waiting, origin: origin).isEmpty)
        #expect(describe(state.cancel(upload, origin: origin)) == ["remove upload", "complete upload cancelled", "add waiting"])
        // libcurl no longer has the upload: a late word of it is nothing.
        #expect(state.finished(upload, origin: origin, code: 42, mayRunAgain: false).isEmpty)
        #expect(state.cancel(upload, origin: origin).isEmpty)
        #expect(state.runningCount == 1)
    }

    /// A redirect's next leg is a new exchange; the cancel that follows the chain may reach the
    /// leg that has ended (nothing happens) or the one waiting for a connection (it ends there,
    /// never handed to libcurl).
    @Test func aCancelDuringARedirectEndsTheLegThatIsStillOpen() {
        var state = State(connectionsPerHost: 1)
        let (busy, first, second) = (Job("busy"), Job("302"), Job("target"))
        #expect(describe(state.start(first, origin: origin)) == ["add 302"])
        #expect(describe(state.finished(first, origin: origin, code: 0, mayRunAgain: false)) == ["remove 302", "complete 302 0"])
        #expect(describe(state.start(busy, origin: origin)) == ["add busy"])
        #expect(state.start(second, origin: origin).isEmpty)   // waits behind busy
        #expect(state.cancel(first, origin: origin).isEmpty)
        #expect(describe(state.cancel(second, origin: origin)) == ["complete target cancelled"])
        // busy's end lets nobody in: the cancelled leg left the line.
        #expect(describe(state.finished(busy, origin: origin, code: 0, mayRunAgain: false)) == ["remove busy", "complete busy 0"])
        #expect(state.runningCount == 0)
    }

    /// A connection refused before the request was written (it had stray bytes) is not reused:
    /// the exchange goes again on a new connection, once; refused again, it ends with the error.
    @Test func aRefusedConnectionIsNotReusedAndTheExchangeGoesAgainOnce() {
        var state = State(connectionsPerHost: 1)
        let (job, next) = (Job("a"), Job("b"))
        _ = state.start(job, origin: origin)
        _ = state.start(next, origin: origin)
        #expect(describe(state.finished(job, origin: origin, code: 42, mayRunAgain: true)) == ["remove a", "add a on a new connection"])
        #expect(state.runningCount == 1)
        #expect(describe(state.finished(job, origin: origin, code: 42, mayRunAgain: true)) == ["remove a", "complete a 42", "add b"])
    }

    /// After an error the origin's place is free for the next, and the next exchange to fail
    /// the same way may go again on a new connection too: a retry is the exchange's, not the loop's.
    @Test func afterAnErrorTheNextExchangeIsUntouchedByIt() {
        var state = State(connectionsPerHost: 1)
        let (failing, next) = (Job("failing"), Job("next"))
        _ = state.start(failing, origin: origin)
        _ = state.start(next, origin: origin)
        #expect(describe(state.finished(failing, origin: origin, code: 56, mayRunAgain: false)) == ["remove failing", "complete failing 56", "add next"])
        #expect(describe(state.finished(next, origin: origin, code: 42, mayRunAgain: true)) == ["remove next", "add next on a new connection"])
        #expect(describe(state.cancel(next, origin: origin)) == ["remove next", "complete next cancelled"])
    }

    @Test func anExchangeLibcurlRefusesEndsAndTheNextRuns() {
        var state = State(connectionsPerHost: 1)
        let (job, next) = (Job("a"), Job("b"))
        _ = state.start(job, origin: origin)
        _ = state.start(next, origin: origin)
        #expect(describe(state.refused(job, origin: origin)) == ["complete a 42", "add b"])
        #expect(state.refused(job, origin: origin).isEmpty)
    }

    /// An exchange no socket could be made for waits for another to leave libcurl, in the order
    /// they failed, libcurl keeping no more connections open than exchanges run; each keeps its place among its
    /// origin's running exchanges. The last one running goes again at once, and fails the
    /// second time; the next end after the waits lifts the limit.
    @Test func anExchangeLackingADescriptorWaitsForAnotherToEnd() {
        var state = State(connectionsPerHost: 2)
        let (a, b, c, d) = (Job("a"), Job("b"), Job("c"), Job("d"))
        for job in [a, b, c] { _ = state.start(job, origin: nil) }
        _ = state.start(d, origin: origin)
        #expect(describe(state.finished(a, origin: nil, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove a", "limit 3"])
        #expect(describe(state.finished(d, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove d", "limit 2"])
        #expect(state.runningCount == 2)
        #expect(describe(state.finished(b, origin: nil, code: 0, mayRunAgain: false)) == ["remove b", "complete b 0", "add a again"])
        #expect(describe(state.cancel(c, origin: nil)) == ["remove c", "complete c cancelled", "add d again"])
        // Lacking one again with another running, it waits again.
        #expect(describe(state.finished(d, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove d", "limit 1"])
        #expect(describe(state.finished(a, origin: nil, code: 0, mayRunAgain: false)) == ["remove a", "complete a 0", "add d again"])
        // Alone, it goes again at once, once.
        #expect(describe(state.finished(d, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove d", "limit 1", "add d again"])
        #expect(describe(state.finished(d, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove d", "complete d 7", "no limit"])
        #expect(state.runningCount == 0)
    }

    /// A cancel reaches an exchange waiting for a descriptor: it ends there, its origin's place
    /// goes to the next waiting for it, and nothing of it is left to run.
    @Test func aCancelEndsAnExchangeWaitingForADescriptor() {
        var state = State(connectionsPerHost: 1)
        let (busy, lacking, next) = (Job("busy"), Job("lacking"), Job("next"))
        _ = state.start(busy, origin: nil)
        _ = state.start(lacking, origin: origin)
        #expect(state.start(next, origin: origin).isEmpty)
        #expect(describe(state.finished(lacking, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true)) == ["remove lacking", "limit 1"])
        // The last one waiting gone, libcurl's limit goes with it, not when busy ends.
        #expect(describe(state.cancel(lacking, origin: origin)) == ["complete lacking cancelled", "no limit", "add next"])
        #expect(state.cancel(lacking, origin: origin).isEmpty)
        #expect(describe(state.finished(busy, origin: nil, code: 0, mayRunAgain: false)) == ["remove busy", "complete busy 0"])
    }

    /// The last one running lacks a descriptor while the other loop's exchanges hold them: it
    /// waits for one of those to leave libcurl, as the other loop says, not for one here; a word
    /// that comes when none waits (one of this loop's ended first) does nothing.
    @Test func anExchangeLackingADescriptorWaitsForTheOtherLoop() {
        var state = State(connectionsPerHost: 2)
        let (stream, later) = (Job("stream"), Job("later"))
        _ = state.start(stream, origin: origin)
        #expect(describe(state.finished(stream, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true,
                                        othersRunElsewhere: true)) == ["remove stream", "limit 1"])
        #expect(state.runningCount == 0 && !state.isIdle)
        #expect(describe(state.start(later, origin: origin)) == ["add later"])
        #expect(describe(state.descriptorFreedElsewhere()) == ["add stream again"])
        #expect(state.descriptorFreedElsewhere().isEmpty)
        #expect(describe(state.finished(stream, origin: origin, code: 0, mayRunAgain: false)) == ["remove stream", "complete stream 0", "no limit"])
        #expect(describe(state.finished(later, origin: origin, code: 0, mayRunAgain: false)) == ["remove later", "complete later 0"])
        #expect(state.isIdle)
    }

    /// HTTPS (no origin counted) is never held back here: libcurl's own cap applies.
    @Test func uncountedExchangesAllRun() {
        var state = State(connectionsPerHost: 1)
        let jobs = (0..<5).map { Job("\($0)") }
        #expect(jobs.flatMap { describe(state.start($0, origin: nil)) } == ["add 0", "add 1", "add 2", "add 3", "add 4"])
        #expect(describe(state.finished(jobs[2], origin: nil, code: 0, mayRunAgain: false)) == ["remove 2", "complete 2 0"])
    }

    /// Every exchange ends exactly once, in any order of starts, cancels, ends and refusals.
    @Test func everyExchangeEndsExactlyOnceWhateverTheOrder() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var state = State(connectionsPerHost: 2)
            let jobs = (0..<6).map { Job("\($0)") }
            var completed: [ObjectIdentifier: Int] = [:]
            var inLibcurl: Set<ObjectIdentifier> = []
            var keepsFewer = false
            // Whether the other loop owes a word: an exchange here waits for one of its own.
            var otherLoopOwes = false
            func apply(_ actions: [State.Action]) {
                for action in actions {
                    switch action {
                    case .add(let job), .addOnNewConnection(let job), .addAgain(let job): inLibcurl.insert(ObjectIdentifier(job))
                    case .remove(let job): inLibcurl.remove(ObjectIdentifier(job))
                    case .complete(let job, _): completed[ObjectIdentifier(job), default: 0] += 1
                    case .limitConnections(let limit): keepsFewer = limit != nil
                    }
                }
            }
            for job in jobs { apply(state.start(job, origin: origin)) }
            for _ in 0..<40 {
                let job = jobs.randomElement(using: &generator)!
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: apply(state.cancel(job, origin: origin))
                case 1: apply(state.finished(job, origin: origin, code: 0, mayRunAgain: Bool.random(using: &generator)))
                case 3: apply(state.finished(job, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true))
                case 4 where Bool.random(using: &generator):
                    if inLibcurl.contains(ObjectIdentifier(job)) { otherLoopOwes = true }
                    apply(state.finished(job, origin: origin, code: 7, mayRunAgain: false, lackedADescriptor: true, othersRunElsewhere: true))
                case 4 where otherLoopOwes:
                    otherLoopOwes = false
                    apply(state.descriptorFreedElsewhere())
                case 2 where inLibcurl.contains(ObjectIdentifier(job)):
                    inLibcurl.remove(ObjectIdentifier(job))   // libcurl refused the add
                    apply(state.refused(job, origin: origin))
                default: break
                }
                #expect(inLibcurl.count <= 2)
                #expect(state.runningCount == inLibcurl.count)
                // One waits for a descriptor only while another runs, here or in the other loop,
                // whose end will free one.
                #expect(!keepsFewer || !inLibcurl.isEmpty || otherLoopOwes)
            }
            for job in jobs { apply(state.cancel(job, origin: origin)) }
            #expect(jobs.allSatisfy { completed[ObjectIdentifier($0)] == 1 })
            #expect(inLibcurl.isEmpty && state.isIdle && !keepsFewer)
        }
    }
}
#endif
