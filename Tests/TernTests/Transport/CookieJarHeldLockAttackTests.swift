#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern

/// A cookie jar's file whose folder lock another holder keeps: another launch of the app
/// starved of the processor, or stopped, in the middle of its own write.
///
/// Security.md: jars in two launches "may share it: each writes its own changes over what the
/// file holds, under a lock on its folder, and drops none of the other's".
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CookieJarHeldLockAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-lock-\(UUID().uuidString)")
    /// The jar's file.
    var file: URL { directory.appendingPathComponent("cookies.json") }
    /// Where the cookies are set and sent.
    let url = URL(string: "https://shop.example.com/")!

    /// The folder, made and locked as another jar's write locks it.
    func holdTheLock() throws -> Int32 {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let holder = open(directory.path, O_RDONLY | O_DIRECTORY)
        try #require(holder >= 0 && flock(holder, LOCK_EX) == 0)
        return holder
    }

    /// The values of the cookies a new jar reads from the file, once `expected` or after 50 s.
    func onDisk(becoming expected: [String]) async throws -> [String] {
        var values: [String] = []
        for _ in 0..<500 {
            values = CookieJar(file: file).cookies(for: url).map(\.value).sorted()
            if values == expected { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return values
    }

    /// The other launch holds the lock for `seconds` (as long as its write takes on a loaded
    /// machine), then writes the file as it read it, with a cookie of its own. The jar gave up
    /// waiting after 2 s and wrote without the lock; the other's write came after, and dropped
    /// the jar's cookie from the file for good (the jar counted it written). Now the jar waits
    /// 5 s, then tries again each second.
    @Test(arguments: [3, 7])
    func aCookieWrittenWhileAnotherHoldsTheLockIsNotDropped(seconds: Int) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let holder = try holdTheLock()
        let elsewhere = directory.appendingPathComponent("elsewhere/cookies.json")
        let other = CookieJar(file: elsewhere)
        other.setCookies(from: ["theme=dark; Max-Age=3600"], for: url)
        other.waitForWrites()

        let jar = CookieJar(file: file)
        jar.setCookies(from: ["session=fresh; Max-Age=3600"], for: url)
        try await Task.sleep(for: .seconds(seconds))
        // The other launch's write, merged from the file as it read it when it took the lock.
        #expect(rename(elsewhere.path, file.path) == 0)
        close(holder)

        #expect(try await onDisk(becoming: ["dark", "fresh"]) == ["dark", "fresh"])
    }

    /// The folder's lock held by someone who never lets it go (a stopped process; in `/tmp`, any
    /// user): the jar waited for it for ever, and its cookies were never written. Now it writes
    /// without the lock once it has waited 30 s. When the holder goes on after all, its write
    /// (of the file as it read it) drops what the jar wrote past it: the jar, which tries each
    /// second to write again under the lock, puts it back, with no change of its own to write.
    @Test func aFolderLockHeldForEverDoesNotStopTheJarsWrites() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let holder = try holdTheLock()
        let jar = CookieJar(file: file)
        jar.setCookies(from: ["session=fresh; Max-Age=3600"], for: url)
        #expect(try await onDisk(becoming: ["fresh"]) == ["fresh"], "the jar's write waited on the lock for ever")

        // The holder goes on: its write, of the file as it was when it took the lock (no file).
        try FileManager.default.removeItem(at: file)
        close(holder)
        #expect(try await onDisk(becoming: ["fresh"]) == ["fresh"], "the holder's write dropped the jar's cookie")
        jar.setCookies(from: ["theme=dark; Max-Age=3600"], for: url)
        #expect(try await onDisk(becoming: ["dark", "fresh"]) == ["dark", "fresh"])
    }
}
