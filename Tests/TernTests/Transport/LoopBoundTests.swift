#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// State a libcurl loop's thread owns: taken on that thread, refused elsewhere in debug builds.
@Suite(.onTestThreads) struct LoopBoundTests {
    /// Runs `work` on a new thread marked as `owner`'s, and returns what it made.
    static func onThread<Result: Sendable>(of owner: LoopThread, _ work: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            Thread {
                owner.markCurrent()
                continuation.resume(returning: work())
            }.start()
        }
    }

    @Test func theOwnersThreadReadsAndChangesIt() async {
        let owner = LoopThread()
        #expect(!owner.isCurrent)
        let (seen, wasCurrent) = await Self.onThread(of: owner) {
            var box = LoopBound([1], owner: owner)
            box.value.append(2)
            box.value[0] += 10
            return (box.value, owner.isCurrent)
        }
        #expect(seen == [11, 2])
        #expect(wasCurrent)
    }

    /// Made on one thread (a loop and an exchange are set up before the loop takes them), then
    /// handed to the owner's.
    @Test func madeElsewhereItIsTheOwnersOnItsThread() async {
        let owner = LoopThread()
        let made = Handover(LoopBound(7, owner: owner))
        let seen = await Self.onThread(of: owner) {
            made.box.value += 1
            return made.box.value
        }
        #expect(seen == 8)
    }

    /// Its holder's `deinit` may run on whatever thread lets go of it last.
    @Test func aDeinitReadsItAnywhere() {
        var box = LoopBound("kept", owner: LoopThread())
        box.valueInDeinit += ", and let go"
        #expect(box.valueInDeinit == "kept, and let go")
    }

    /// Another loop's thread is another thread.
    @Test func anotherLoopsThreadIsNotTheOwners() async {
        let owner = LoopThread(), other = LoopThread()
        let (ownerIsCurrent, otherIsCurrent) = await Self.onThread(of: other) { (owner.isCurrent, other.isCurrent) }
        #expect(!ownerIsCurrent)
        #expect(otherIsCurrent)
    }

    #if DEBUG
    /// A debug build stops the program at the first touch from a thread not the owner's; the
    /// child touches it from the thread it runs the test on, which no loop marked.
    @Test(.exitTest) func aTouchFromAnotherThreadStopsADebugBuild() async {
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .failure) {
                let box = LoopBound(0, owner: LoopThread())
                _ = box.value
            }
        }
    }

    /// The same child, touching it on the owner's thread, exits well: it is the thread that
    /// stops it above, and nothing else.
    @Test(.exitTest) func theSameTouchOnTheOwnersThreadDoesNot() async {
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) {
                let owner = LoopThread()
                owner.markCurrent()
                let box = LoopBound(0, owner: owner)
                _ = box.value
            }
        }
    }
    #endif
}

/// Carries a box to its owner's thread, as a loop takes an exchange made on the sender's.
private final class Handover<Value>: @unchecked Sendable {
    var box: LoopBound<Value>

    init(_ box: LoopBound<Value>) {
        self.box = box
    }
}
#endif
