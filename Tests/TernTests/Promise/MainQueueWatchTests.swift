import Foundation
import Testing
@testable import TernCore
import Tern
import TernTesting

/// The watch that says, once, that callbacks wait for a main queue that does not run: over a
/// queue standing in for the main one (blocked, or running), and over the process's main queue
/// in a child process whose main thread is blocked.
@Suite(.onTestThreads) struct MainQueueWatchTests {
    @Test func aBlockedQueueIsNamedOnceAfterTheFirstHopToIt() async throws {
        let blocked = DispatchQueue(label: "tern.test.blocked-main")
        let release = DispatchSemaphore(value: 0)
        blocked.async { _ = release.wait(timeout: .now() + 30) }
        defer { release.signal() }
        let said = Recorder<String>()
        let watch = MainQueueWatch(watching: blocked, patience: 0.1) { said.append($0) }
        watch.noteHop(to: .global())
        watch.noteHop(to: DispatchQueue(label: "tern.test.other"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(said.items.isEmpty, "hops elsewhere do not arm it")
        watch.noteHop(to: blocked)
        watch.noteHop(to: blocked)
        #expect(await eventually(timeout: 10) { !said.items.isEmpty })
        try await Task.sleep(for: .milliseconds(300))
        #expect(said.items.count == 1)
        #expect(said.items.first?.contains("dispatchMain()") == true)
    }

    @Test func aQueueThatRunsIsNeverNamed() async throws {
        let running = DispatchQueue(label: "tern.test.running-main")
        let said = Recorder<String>()
        let watch = MainQueueWatch(watching: running, patience: 0.2) { said.append($0) }
        watch.noteHop(to: running)
        let ranAfter = DispatchSemaphore(value: 0)
        running.asyncAfter(deadline: .now() + 0.6) { ranAfter.signal() }
        #expect(ranAfter.wait(timeout: .now() + 10) == .success)
        #expect(said.items.isEmpty)
    }

    /// A program whose main thread blocks, with a callback on the default `.main` queue, is told
    /// on standard error within the watch's five seconds; one whose main queue runs (as a
    /// test's child process does) is told nothing.
    @Test(arguments: [true, false])
    func aProgramWhoseMainThreadBlocksIsToldWhy(blocked: Bool) async throws {
        let outcome = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [blocked] in
            if blocked { DispatchQueue.main.async { while true { sleep(60) } } }
            Promise(value: 1).onSuccess { _ in }
            try await Task.sleep(for: .seconds(6.5))
            exit(0)
        }
        let words = String(decoding: outcome?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("callbacks wait for the main queue") == blocked, "\(words)")
    }
}
