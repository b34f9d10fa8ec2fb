// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern

/// A cookie jar's file that is huge: a path that names a disk image or a log by mistake, a
/// file a crash or a sync client left full of zeros (here 1 GiB, sparse, of the user's own).
/// `CookieJar.init(file:)` read the whole file into memory before it tried to decode it
/// (`CookieJar.contents(of:)` read up to the file's size, whatever it was): the app's memory
/// took a gigabyte at launch, for a file it then ignored. No jar writes more than its
/// `maximumCount` cookies of a few KiB each (RFC 6265bis's 4 KiB for a name and value): a
/// file past that is no jar's, and need not be read further to be ignored. The disk cache
/// bounds the same read: "one larger than `largest`, more than the cache would ever write, is
/// not read at all [...] (one planted a gigabyte long would be read whole into memory)"
/// (`CacheFile.read`).
///
/// Promised (`CookieJar.init(file:)`): a file "longer than a jar of `maximumCount` cookies
/// writes" is neither read nor written over. Observed: peak resident memory grew 1025 MiB. The jar does
/// not depend on the transport: it fails the same on both.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct CookieJarHugeFileAttackTests {
    /// More than a jar of 3,000 cookies of 4 KiB each would ever write, with room to spare.
    static let allowedGrowth = 64 << 20

    @Test func aHugeFileAtTheJarsPathIsNotReadIntoMemory() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-huge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("cookies.json")
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(descriptor >= 0 && ftruncate(descriptor, 1 << 30) == 0)
        close(descriptor)

        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [file = file.path as String] in
                let before = try residentBytes("VmRSS")
                let jar = CookieJar(file: URL(fileURLWithPath: file))
                let grown = try residentBytes("VmHWM") - before
                guard jar.all.isEmpty else { exit(3) }
                print(grown)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }
}
#endif
