import Foundation
import Testing
@testable import Tern

/// How a write to a file other processes share waits for their lock (`LockWait`), each event
/// alone, with no file: the cookie jar and the recordings follow it.
@Suite(.onTestThreads) struct LockWaitTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    func step(_ wait: inout LockWait, _ tried: LockWait.Tried, _ now: Date) -> (LockWait.Next, Bool) {
        let (next, retry) = wait.tried(tried, at: now)
        return (next, retry)
    }

    func came(_ wait: inout LockWait) -> Bool {
        wait.retryCame()
    }

    @Test func aFreeLockOrNoneIsWrittenAtOnce() {
        var wait = LockWait()
        #expect(wait.nextPatience == LockWait.patience)
        #expect(step(&wait, .locked, start) == (.write, false))
        #expect(step(&wait, .unavailable, start) == (.write, false))
        #expect(!wait.isWaiting)
        #expect(!came(&wait))
    }

    /// A holder kept past the patience: tried again each second, without waiting, until the
    /// lock is free; one retry due at a time, however many writes find it held.
    @Test func aHeldLockIsTriedAgainUntilItIsFree() {
        var wait = LockWait()
        #expect(step(&wait, .held, start) == (.wait, true))
        #expect(wait.isWaiting && wait.nextPatience == 0)
        #expect(step(&wait, .held, start + 0.5) == (.wait, false), "a second retry")
        #expect(came(&wait))
        #expect(step(&wait, .held, start + 1) == (.wait, true))
        #expect(came(&wait))
        #expect(step(&wait, .locked, start + LockWait.longestWait - 1) == (.write, false))
        #expect(!wait.isWaiting && wait.nextPatience == LockWait.patience)
    }

    /// A retry due after a write made meanwhile under the lock has nothing to do.
    @Test func aRetryAfterAWriteUnderTheLockDoesNothing() {
        var wait = LockWait()
        #expect(step(&wait, .held, start) == (.wait, true))
        #expect(step(&wait, .locked, start + 0.5) == (.write, false))
        #expect(!came(&wait))
        #expect(step(&wait, .held, start + 2) == (.wait, true))
    }

    /// Past the longest wait, the write goes without the lock, then waits again for a write
    /// under it, and goes without again only after another longest wait.
    @Test func aHolderStoppedForGoodIsWrittenPastAndAWriteUnderTheLockOwed() {
        var wait = LockWait()
        #expect(step(&wait, .held, start) == (.wait, true))
        let past = start + LockWait.longestWait
        #expect(came(&wait))
        #expect(step(&wait, .held, past) == (.writePastTheHolder, true))
        #expect(wait.isWaiting, "no write under the lock is owed")
        #expect(came(&wait))
        #expect(step(&wait, .held, past + 1) == (.wait, true))
        #expect(came(&wait))
        #expect(step(&wait, .held, past + LockWait.longestWait) == (.writePastTheHolder, true))
        #expect(came(&wait))
        #expect(step(&wait, .locked, past + LockWait.longestWait + 1) == (.write, false))
        #expect(!wait.isWaiting)
    }
}

/// A file replaced only if it is still as it was read (`OwnFiles.replace(_:with:mode:ifStill:)`).
@Suite(.onTestThreads) struct ReplaceIfStillTests {
    @Test func aFileChangedSinceItWasReadIsNotReplaced() throws {
        let folder = try newFolder("tern-replace-if-still-")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("shared.json")
        let absent = FileStamp(of: file.path)
        #expect(!absent.exists && absent.size == nil)
        let written = try OwnFiles.replace(file, with: Data("first".utf8), mode: nil, ifStill: absent)
        #expect(FileStamp(of: file.path) == written && written.size == 5)

        // Another writes it meanwhile: this write is refused, and leaves no file behind.
        try OwnFiles.replace(file, with: Data("other's".utf8), mode: nil)
        #expect(throws: OwnFiles.ChangedSinceRead.self) {
            try OwnFiles.replace(file, with: Data("mine".utf8), mode: nil, ifStill: written)
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "other's")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["shared.json"])
        #expect(throws: OwnFiles.ChangedSinceRead.self) {
            try OwnFiles.replace(file, with: Data("mine".utf8), mode: nil, ifStill: absent)
        }
        try OwnFiles.replace(file, with: Data("mine".utf8), mode: nil, ifStill: FileStamp(of: file.path))
        #expect(try String(contentsOf: file, encoding: .utf8) == "mine")
    }
}
