#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download killed before it recorded its bytes (`kill -9`, a crash, a tool that exits on
/// Ctrl-C without cancelling) left its hidden partial file beside the destination for good: no
/// record names it, so nothing resumed or removed it. The next download to that destination
/// removes such leftovers, and nothing else: not a file named so but of the wrong shape, not
/// one written lately, not a link, not a file with another name, not another destination's.
/// (No time limit on the suite: its exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DownloadLeftoverTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-leftovers-\(UUID().uuidString)")

    /// A file at `name` in the test's folder holding `text`, last written `age` seconds ago.
    func plant(_ name: String, _ text: String = "bytes", age: TimeInterval = 3_600) throws -> URL {
        let file = root.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: file.path)
        return file
    }

    @Test(.timeLimit(.minutes(1))) func theNextDownloadRemovesALeftoverAndNothingElse() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let destination = root.appendingPathComponent("release.tar")
        let partial = { (destination: String) in ".\(destination).\(UUID().uuidString).tern-partial" }
        let leftover = try plant(partial("release.tar"))
        let recent = try plant(partial("release.tar"), age: 5)
        let unnamed = try plant(".release.tar.not-a-uuid.tern-partial")
        let another = try plant(partial("other.tar"))
        let precious = try plant("precious.txt", "the user's")
        let linked = root.appendingPathComponent(partial("release.tar"))
        try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: precious)
        let hardLinked = root.appendingPathComponent(partial("release.tar"))
        #expect(link(precious.path, hardLinked.path) == 0)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3_600)], ofItemAtPath: precious.path)

        let server = try RawServer { connection in
            while connection.readRequest() != nil { guard connection.send(RawServer.Connection.response("the release")) else { return } }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let file = try await api.download(route: .get(server.baseURL + "/release.tar"), to: destination).value
        #expect(try Data(contentsOf: file.fileURL) == Data("the release".utf8))
        // Removed off the request's path: waited for.
        #expect(await eventually(timeout: 10) { !FileManager.default.fileExists(atPath: leftover.path) })
        for kept in [recent, unnamed, another, precious, hardLinked] {
            #expect(FileManager.default.fileExists(atPath: kept.path), "\(kept.lastPathComponent)")
        }
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: linked.path)) == precious.path)
        #expect(try Data(contentsOf: precious) == Data("the user's".utf8))
    }

    #if os(Linux) && compiler(>=6.3)
    /// A partial file another process's download holds (its record lock) is no leftover,
    /// however long unwritten: it stays until that process lets it go. The other process is a
    /// child (an exit test) that opens the file as a download does, and holds it until told.
    @Test(.exitTest) func aPartialFileAnotherProcessHoldsStaysUntilItIsLetGo() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let destination = root.appendingPathComponent("release.tar")
        let held = try plant(".release.tar.\(UUID().uuidString).tern-partial")
        let (holding, letGo) = (root.appendingPathComponent("holding"), root.appendingPathComponent("let-go"))
        // Waited for once the turn is taken (behind other exit tests, it may take minutes): from
        // then on, only the child's start.
        let isHeld = await ExitTestTurns.inTurn { () async -> Bool in
            async let child = #expect(processExitsWith: .success) { [held = held.path as String, holding = holding.path as String, letGo = letGo.path as String] in
                let marker = NSObject()
                let (handle, _) = try PartialFile.open(URL(fileURLWithPath: held), creating: false, for: ObjectIdentifier(marker))
                _ = FileManager.default.createFile(atPath: holding, contents: nil)
                let deadline = Date(timeIntervalSinceNow: 60)
                while !FileManager.default.fileExists(atPath: letGo), Date() < deadline { usleep(10_000) }
                withExtendedLifetime((handle, marker)) {}
            }
            let isHeld = await eventually(timeout: 60) { FileManager.default.fileExists(atPath: holding.path) }
            if isHeld {
                PartialFile.removeLeftovers(besides: destination)
                #expect(FileManager.default.fileExists(atPath: held.path), "a file another process held was removed")
            }
            _ = FileManager.default.createFile(atPath: letGo.path, contents: nil)
            _ = await child
            return isHeld
        }
        try #require(isHeld, "the child never held the file")
        PartialFile.removeLeftovers(besides: destination)
        #expect(!FileManager.default.fileExists(atPath: held.path), "a file nobody holds any more stayed")
    }
    #endif
}
