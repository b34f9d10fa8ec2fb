import Foundation
import Dispatch
import Testing
@testable import Tern
@testable import TernCore
import TernTesting

/// A cancel is heard only once its handlers have run (ef859c9), attacked: handlers that use
/// the promise they cancel (register on it, read it, cancel it again, settle it, cancel
/// others that cancel it back), cancels racing fulfils and late callbacks thousands of times,
/// the combinators, and awaiting Tasks cancelled while another thread cancels the promise.
/// Every callback runs once, with the one result the promise settled with; nothing hangs.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CancelVisibilityAttackTests {
    let queue = DispatchQueue(label: "tern.test.cancel-visibility")

    private static func isCancelled<T>(_ result: Result<T, any Error>?) -> Bool {
        if case .failure(APIError.cancelled)? = result { true } else { false }
    }

    /// The handler registers callbacks on the promise it cancels, reads its result (none yet),
    /// cancels it again, fulfils and rejects it: the callbacks run once each, after the
    /// handler, with "cancelled"; the handler runs once.
    @Test func aHandlerThatUsesThePromiseItCancels() async {
        let (promise, resolver) = Promise<Int>.pending(in: queue)
        let seen = Recorder<String>()
        let handlerEnded = Recorder<Bool>()
        resolver.onCancel {
            seen.append("handler: current \(promise.currentResult == nil ? "none" : "some"), cancelled \(resolver.isCancelled)")
            promise.onResult(in: .global()) { result in
                seen.append("from handler: \(Self.isCancelled(result)) after handler \(handlerEnded.items == [true])")
            }
            promise.cancel()
            resolver.fulfill(7)
            resolver.reject(TestError())
            seen.append("handler: still none \(promise.currentResult == nil)")
            handlerEnded.append(true)
        }
        promise.onResult(in: .global()) { result in seen.append("before: \(Self.isCancelled(result)) after handler \(handlerEnded.items == [true])") }
        promise.cancel()
        #expect(Self.isCancelled(promise.currentResult))
        #expect(Self.isCancelled(await promise.result))
        #expect(await eventually { seen.items.count == 4 })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(Set(seen.items) == ["handler: current none, cancelled true", "handler: still none true",
                                    "from handler: true after handler true", "before: true after handler true"], "\(seen.items)")
        #expect(seen.items.count == 4)
    }

    /// Two promises whose handlers cancel each other, from two threads at once, a thousand
    /// times: no deadlock, each handler once, both heard as cancelled only after their own.
    @Test func handlersThatCancelEachOtherFromTwoThreads() async {
        for round in 0..<1_000 {
            let (first, firstResolver) = Promise<Int>.pending(in: queue)
            let (second, secondResolver) = Promise<Int>.pending(in: queue)
            let ran = Recorder<String>()
            firstResolver.onCancel {
                ran.append("first")
                second.cancel()
            }
            secondResolver.onCancel {
                ran.append("second")
                first.cancel()
            }
            let heard = Recorder<String>()
            first.onResult(in: .global()) { heard.append("first \(Self.isCancelled($0)) \(ran.items.contains("first"))") }
            second.onResult(in: .global()) { heard.append("second \(Self.isCancelled($0)) \(ran.items.contains("second"))") }
            let go = DispatchGroup()
            DispatchQueue.global().async(group: go) { first.cancel() }
            DispatchQueue.global().async(group: go) { second.cancel() }
            #expect(await eventually { go.wait(timeout: .now()) == .success })
            #expect(await eventually { heard.items.count == 2 }, "round \(round)")
            withExtendedLifetime((firstResolver, secondResolver)) {}   // let go unsettled, each would fail its promise as abandoned
            #expect(Set(heard.items) == ["first true true", "second true true"], "round \(round): \(heard.items)")
            #expect(ran.items.sorted() == ["first", "second"], "round \(round): \(ran.items)")
            if heard.items.count != 2 || ran.items.count != 2 { return }
        }
    }

    /// A cancel races a fulfil, each from a thread of its own, while a third registers
    /// callbacks and reads the result, five thousand times: every callback runs exactly once,
    /// with the result the promise kept; a result read is never another one; the handler
    /// runs once exactly when the promise was cancelled, before anyone heard it.
    @Test func aCancelRacingAFulfilAndLateCallbacks() async {
        var outcomes: [String: Int] = [:]
        for round in 0..<5_000 {
            let (promise, resolver) = Promise<Int>.pending(in: queue)
            let handled = Recorder<Bool>()
            resolver.onCancel { handled.append(true) }
            let heard = Recorder<String>()
            let record: @Sendable (String, Result<Int, any Error>) -> Void = { name, result in
                switch result {
                case .success(let value): heard.append("\(name) \(value)")
                case .failure(APIError.cancelled): heard.append("\(name) cancelled \(handled.items.count)")
                case .failure(let error): heard.append("\(name) \(error)")
                }
            }
            promise.onResult(in: .global()) { record("early", $0) }
            let mapped = promise.map { $0 * 2 }
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            DispatchQueue.global().async(group: done) { start.wait(); promise.cancel() }
            DispatchQueue.global().async(group: done) { start.wait(); resolver.fulfill(21) }
            DispatchQueue.global().async(group: done) {
                start.wait()
                for index in 0..<3 {
                    if let result = promise.currentResult { record("read\(index)", result) }
                    promise.onResult(in: .global()) { record("late\(index)", $0) }
                }
            }
            start.signal()
            start.signal()
            start.signal()
            let awaited = await promise.result
            let mappedResult = await mapped.result
            #expect(await eventually { done.wait(timeout: .now()) == .success })
            #expect(await eventually { heard.items.filter { !$0.hasPrefix("read") }.count == 4 }, "round \(round): \(heard.items)")
            let expected: String
            switch awaited {
            case .success(let value):
                #expect(value == 21)
                #expect((try? mappedResult.get()) == 42, "round \(round)")
                #expect(handled.items.isEmpty, "round \(round)")
                expected = "21"
            case .failure(APIError.cancelled):
                #expect(Self.isCancelled(mappedResult), "round \(round)")
                #expect(handled.items == [true], "round \(round)")
                expected = "cancelled 1"
            case .failure(let error):
                Issue.record("round \(round): \(error)")
                return
            }
            outcomes[expected, default: 0] += 1
            // Each callback once, with the kept result, heard after the handler if cancelled.
            let names = heard.items.map { $0.split(separator: " ")[0] }
            #expect(names.filter { !$0.hasPrefix("read") }.sorted() == ["early", "late0", "late1", "late2"], "round \(round): \(heard.items)")
            for item in heard.items {
                #expect(item.split(separator: " ", maxSplits: 1)[1] == expected, "round \(round): \(heard.items)")
            }
            if heard.items.contains(where: { !$0.hasSuffix(expected) }) { return }
        }
        print("CancelVisibilityAttackTests race: \(outcomes)")
    }

    /// A handler that blocks until another thread fulfils the promise and reads it: the fulfil
    /// is refused without waiting, the read sees nothing yet, no deadlock; then "cancelled".
    @Test func aHandlerThatBlocksOnAnotherThreadTouchingThePromise() async {
        for round in 0..<200 {
            let (promise, resolver) = Promise<Int>.pending(in: queue)
            let read = Recorder<String>()
            resolver.onCancel {
                let other = DispatchSemaphore(value: 0)
                Thread {
                    resolver.fulfill(1)
                    read.append(promise.currentResult == nil ? "none" : "some")
                    promise.onResult(in: .global()) { read.append(Self.isCancelled($0) ? "late cancelled" : "late other") }
                    other.signal()
                }.start()
                _ = other.wait(timeout: .now() + 30)
                read.append("handler done")
            }
            let canceller = Thread { promise.cancel() }
            canceller.start()
            #expect(Self.isCancelled(await promise.result), "round \(round)")
            #expect(await eventually { read.items.count == 3 }, "round \(round)")
            #expect(read.items == ["none", "handler done", "late cancelled"], "round \(round): \(read.items)")
            if read.items != ["none", "handler done", "late cancelled"] { return }
        }
    }

    /// Tasks awaiting `.value` are cancelled while another thread cancels the promise, a
    /// thousand times: each hears "cancelled" (APIError.cancelled) only after the handler,
    /// which ran once.
    @Test func awaitingTasksCancelledWhileAnotherThreadCancels() async {
        for round in 0..<1_000 {
            let (promise, resolver) = Promise<Int>.pending(in: queue)
            let handled = Recorder<Bool>()
            resolver.onCancel {
                if round % 4 == 0 { usleep(200) }
                handled.append(true)
            }
            let tasks = (0..<3).map { _ in
                Task.onTestThreads { () async -> String in
                    do {
                        return "value \(try await promise.value)"
                    } catch APIError.cancelled {
                        return "cancelled \(handled.items.count)"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            let canceller = Thread { promise.cancel() }
            if round % 2 == 0 { canceller.start() }
            tasks.forEach { $0.cancel() }
            if round % 2 == 1 { canceller.start() }
            var answers: [String] = []
            for task in tasks { answers.append(await task.value) }
            withExtendedLifetime(resolver) {}   // let go unsettled, it would fail the promise as abandoned
            #expect(answers == ["cancelled 1", "cancelled 1", "cancelled 1"], "round \(round)")
            #expect(handled.items == [true], "round \(round)")
            if answers != ["cancelled 1", "cancelled 1", "cancelled 1"] { return }
        }
    }

    /// `all`, `race` and `any` cancelled from another thread while their parts' handlers are
    /// slow: the combined promise is heard as cancelled only once every part's handler ran.
    @Test(arguments: ["all", "race", "any"]) func aCombinatorIsHeardAfterItsPartsHandlers(_ kind: String) async {
        for round in 0..<100 {
            let parts = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
            let handled = Recorder<Int>()
            for (index, part) in parts.enumerated() {
                part.resolver.onCancel {
                    usleep(2_000)
                    handled.append(index)
                }
            }
            let heard: String
            switch kind {
            case "all": heard = await Self.heardAfterACancelFromAnotherThread(Promise.all(parts.map(\.promise), in: queue), handled: handled)
            case "race": heard = await Self.heardAfterACancelFromAnotherThread(Promise.race(parts.map(\.promise), in: queue), handled: handled)
            default: heard = await Self.heardAfterACancelFromAnotherThread(Promise.any(parts.map(\.promise), in: queue), handled: handled)
            }
            // Held to here: a resolver let go unsettled fails its promise as abandoned, and the
            // optimizer lets the parts' go as soon as they are last used.
            withExtendedLifetime(parts) {}
            #expect(heard == "cancelled, 3 handled", "\(kind) round \(round)")
            if heard != "cancelled, 3 handled" { return }
        }
    }

    /// A download cancelled from another thread at a point that moves from round to round (at
    /// once, at its first byte, halfway, at its last byte), sixty times: whoever hears
    /// "cancelled" finds the kept partial file and its record, nothing, or the whole
    /// destination alone (as CancelledDownloads.check checks).
    @Test(.timeLimit(.minutes(3))) func aDownloadCancelledFromAnotherThreadAtMovingPoints() async throws {
        let size = CancelledDownloads.size
        let outcomes = try await CancelledDownloads.run(60, name: "moving-cancel") { api, route, destination, round in
            let promise = api.download(route: route, to: destination)
            let canceller = CancelledDownloads.canceller(of: promise)
            let threshold: Int64? = switch round % 4 {
            case 0: nil
            case 1: 1
            case 2: Int64(size / 2)
            default: Int64(size)
            }
            if let threshold {
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= threshold { canceller.signal() } }
            } else {
                canceller.signal()
            }
            let result = await promise.result
            canceller.signal()
            return result
        }
        print("CancelVisibilityAttackTests moving points: \(outcomes)")
    }

    /// Cancels `promise` from a thread of its own; says what a Task awaiting it heard, and how
    /// many handlers had run by then.
    static func heardAfterACancelFromAnotherThread<T: Sendable>(_ promise: Promise<T>, handled: Recorder<Int>) async -> String {
        let waiting = Task.onTestThreads { () async -> String in
            let result = await promise.result
            return "\(isCancelled(result) ? "cancelled" : "\(result)"), \(handled.items.count) handled"
        }
        let canceller = Thread { promise.cancel() }
        canceller.start()
        return await waiting.value
    }
}
