#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A cookie jar's file (`CookieJar(file:)`) that is not what the jar wrote, found at launch:
/// - one another user owns (put there first in a folder others may write to, `/tmp`, or
///   reached through a link): its cookies are not taken, since they would log the app in to the
///   other user's account (session fixation), and what the app then sent would go there;
/// - a pipe (whose open waits for a writer): the jar is made at once, empty, not waited on;
/// - the temporary file of a write cut short (the app killed during it), full of cookies: the
///   next write removes it, and none of the user's files beside it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieJarFileAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-file-\(UUID().uuidString)")
    /// The jar's file.
    var file: URL { directory.appendingPathComponent("cookies.json") }
    /// Where the cookies are set and sent.
    let url = URL(string: "https://shop.example.com/")!

    /// A jar's file holding `session=planted`, written as the jar writes one.
    func plantJar(at planted: URL) {
        let jar = CookieJar(file: planted)
        jar.setCookies(from: ["session=planted; Max-Age=3600"], for: url)
        jar.waitForWrites()
    }

    @Test(.enabled(if: getuid() == 0, "giving a file to another user takes root"), arguments: [false, true])
    func aJarFileAnotherUserOwnsIsNotTaken(throughALink: Bool) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let planted = throughALink ? directory.appendingPathComponent("elsewhere.json") : file
        plantJar(at: planted)
        try #require(CookieJar(file: planted).cookies(for: url).map(\.value) == ["planted"])
        try #require(chown(planted.path, 65534, 65534) == 0)
        if throughALink { try FileManager.default.createSymbolicLink(at: file, withDestinationURL: planted) }
        let jar = CookieJar(file: file)
        #expect(jar.isEmpty)
        #expect(jar.headerValue(for: url) == nil)
    }

    @Test func aPipeWhereTheJarsFileShouldBeIsNotWaitedOn() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try #require(mkfifo(file.path, 0o600) == 0)
        let file = file
        let made = DispatchSemaphore(value: 0)
        let jars = Recorder<CookieJar>()
        DispatchQueue.global().async {
            jars.append(CookieJar(file: file))
            made.signal()
        }
        let waited = made.wait(timeout: .now() + 10) == .timedOut
        if waited {
            // Lets the jar's open go on (a writer came), so that no thread is left waiting.
            let writer = open(file.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            made.wait()
        }
        #expect(!waited, "the jar waited on the pipe for a writer")
        #expect(jars.items.first?.isEmpty == true)
    }

    @Test func theTemporaryFileOfAWriteCutShortIsRemovedAndNothingElse() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cutShort = directory.appendingPathComponent(".cookies.json.\(UUID().uuidString).tmp")
        try #require(FileManager.default.createFile(atPath: cutShort.path, contents: Data(#"[{"name":"session","val"#.utf8),
                                                    attributes: [.posixPermissions: 0o600, .modificationDate: Date(timeIntervalSinceNow: -120)]))
        // Made a moment ago: the write of another jar that gave up waiting for the folder's lock.
        let underWay = directory.appendingPathComponent(".cookies.json.\(UUID().uuidString).tmp")
        try #require(FileManager.default.createFile(atPath: underWay.path, contents: Data("[]".utf8), attributes: [.posixPermissions: 0o600]))
        // The user's: a note named like the jar's, a link named like a temporary file, another jar's temporary file.
        let kept = [".cookies.json.notes.tmp", ".cookies.json.\(UUID().uuidString).tmp", ".other.json.\(UUID().uuidString).tmp", "target"]
        try Data("mine".utf8).write(to: directory.appendingPathComponent(kept[0]))
        try Data("mine".utf8).write(to: directory.appendingPathComponent(kept[3]))
        try Data("mine".utf8).write(to: directory.appendingPathComponent(kept[2]))
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent(kept[1]).path, withDestinationPath: kept[3])

        let jar = CookieJar(file: file)
        jar.setCookies(from: ["session=fresh; Max-Age=3600"], for: url)
        jar.waitForWrites()

        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(Set(names) == Set(kept + ["cookies.json", underWay.lastPathComponent]), "the write cut short left, or the jar took a file of the user's")
        #expect(try String(contentsOf: directory.appendingPathComponent(kept[3]), encoding: .utf8) == "mine")
        #expect(CookieJar(file: file).cookies(for: url).map(\.value) == ["fresh"])
    }
}
