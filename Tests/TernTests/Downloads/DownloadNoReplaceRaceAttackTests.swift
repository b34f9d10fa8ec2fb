#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernCore

/// A download told not to replace its destination, finishing while another program makes a file
/// of that name (a browser saving the same report, a second run of the same tool).
///
/// What went wrong: the final move was FileManager's, which checks that nothing is at the
/// destination and then renames over whatever is: a file the other program made in between was
/// replaced, and it went on writing a file with no name. The move is now one step that refuses
/// a name that exists.
///
/// The other program here is a thread that makes the file exclusively (`O_EXCL`), as fast as it
/// can, and takes it away again by renaming it aside, which tells whose file the name held; the
/// download's move runs many times against it, each either delivered or refused, and what it
/// delivered is taken away the same way.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DownloadNoReplaceRaceAttackTests {
    /// What the other program saw, and when it should stop.
    struct Rival {
        var stop = false
        /// Times it made the file.
        var made = 0
        /// Times its file was replaced under it.
        var replaced = 0
    }

    /// The ways the move can go: the one it takes on this system, and the one without
    /// `renameat2`, which Apple's systems and some file systems take.
    enum Way: String, CaseIterable {
        case itsOwn, link

        func move(_ file: URL, to destination: URL) throws {
            switch self {
            case .itsOwn: try ExclusiveMove.move(file, to: destination)
            case .link: try ExclusiveMove.linkThenUnlink(file, to: destination)
            }
        }
    }

    @Test(arguments: Way.allCases) func aFileMadeAsTheDownloadEndsIsNeverReplaced(way: Way) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-no-replace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (destination, partial) = (folder.appendingPathComponent("report.pdf"), folder.appendingPathComponent("partial"))
        let (rivalsAside, oursAside) = (folder.appendingPathComponent("rival's"), folder.appendingPathComponent("ours"))
        /// Renames the destination aside: whether it was the file `identity` names.
        @Sendable func takeAway(_ identity: stat, to aside: URL) -> Bool {
            var taken = stat()
            guard rename(destination.path, aside.path) == 0, stat(aside.path, &taken) == 0 else { return false }
            unlink(aside.path)
            return taken.st_ino == identity.st_ino
        }
        let rival = LockedBox(Rival())
        let rivalDone = DispatchSemaphore(value: 0)
        Thread {
            defer { rivalDone.signal() }
            while !rival.withLock({ $0.stop }) {
                let descriptor = open(destination.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
                guard descriptor >= 0 else {
                    sched_yield()
                    continue
                }
                defer { close(descriptor) }
                rival.withLock { $0.made += 1 }
                var mine = stat()
                fstat(descriptor, &mine)
                if !takeAway(mine, to: rivalsAside) { rival.withLock { $0.replaced += 1 } }
            }
        }.start()
        // The other program has begun: a first file of its own made and taken away.
        for _ in 0..<10_000 where rival.withLock({ $0.made == 0 }) { usleep(1_000) }
        var (moved, refused, lost, otherFailures) = (0, 0, 0, [String]())
        for _ in 0..<10_000 {
            let descriptor = open(partial.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(descriptor >= 0)
            var ours = stat()
            fstat(descriptor, &ours)
            close(descriptor)
            do {
                try way.move(partial, to: destination)
                moved += 1
                if !takeAway(ours, to: oursAside) { lost += 1 }
            } catch let error as CocoaError where error.code == .fileWriteFileExists {
                refused += 1
            } catch {
                otherFailures.append("\(error)")
            }
            unlink(partial.path)
        }
        rival.withLock { $0.stop = true }
        rivalDone.wait()
        let (made, replaced) = rival.withLock { ($0.made, $0.replaced) }
        #expect(replaced == 0, "the other program's file was replaced")
        #expect(lost == 0, "a moved file was gone or another's")
        #expect(otherFailures.isEmpty, "\(otherFailures.prefix(3))")
        // Both happened: the race was run.
        #expect(moved > 0 && refused > 0 && made > 0, "moved \(moved), refused \(refused), made \(made)")
    }

    /// A link that names nothing is a name that exists: refused, and left as it was (as
    /// FileManager's move refused it too).
    @Test(arguments: Way.allCases) func aDanglingLinkAtTheDestinationIsRefusedAndKept(way: Way) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-no-replace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (destination, partial) = (folder.appendingPathComponent("report.pdf"), folder.appendingPathComponent("partial"))
        let nowhere = folder.appendingPathComponent("nowhere")
        try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: nowhere)
        try Data("ours".utf8).write(to: partial)
        let error = #expect(throws: CocoaError.self) { try way.move(partial, to: destination) }
        #expect(error?.code == .fileWriteFileExists)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: destination.path) == nowhere.path)
        #expect(!FileManager.default.fileExists(atPath: nowhere.path))
    }
}
