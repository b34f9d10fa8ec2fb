#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Two jars sharing a file, one of them writing while the process has no descriptor left outside
/// the last eight, which Tern's files leave to the rest of the process (a burst of downloads
/// under a low limit). The write fails for now, and is made again at the next request. But any
/// write of Tern's then (a jar's, a recording's, the disk cache's) left its new file behind
/// (`.<name>.<UUID>.tmp`): `OwnFiles.open` made it (`O_CREAT | O_EXCL`) before it refused the
/// descriptor it got, and nobody removed it. And a jar that could not read the file for want
/// of a descriptor took it for one without cookies: had a descriptor been freed before its
/// write, it would have written its own cookies alone, over the other jar's.
///
/// Security.md: "a cookie jar whose file could not be written then writes it again at the next
/// request" (no descriptor free); jars in two launches "may share it: each writes its own
/// changes over what the file holds, [...] and drops none of the other's". The jar does not
/// depend on the transport: it fails the same on both.
@Suite(.onTestThreads) struct CookieJarDescriptorShortageAttackTests {
    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func aJarShortOfADescriptorLeavesNothingBehindAndDropsNoneOfAnothersCookies() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-jar-short-\(getpid())")
                let file = folder.appendingPathComponent("cookies.json")
                defer { try? manager.removeItem(at: folder) }
                let url = URL(string: "https://shop.example.com/")!
                func onDisk() -> String {
                    let values = CookieJar(file: file).cookies(for: url).map(\.value).sorted()
                    return "\(values), \((try? manager.contentsOfDirectory(atPath: folder.path).sorted()) ?? [])"
                }

                let jar = CookieJar(file: file)
                let other = CookieJar(file: file)
                other.setCookies(from: ["theme=dark; Max-Age=3600"], for: url)
                other.waitForWrites()
                print("before: \(onDisk())")

                let taken = DescriptorWaitAttackTests.takeDescriptors(leaving: 0, reserve: 8)
                jar.setCookies(from: ["session=fresh; Max-Age=3600"], for: url)
                jar.waitForWrites()
                let replaced = Result { try OwnFiles.replace(folder.appendingPathComponent("other.json"), with: Data("{}".utf8), mode: nil) }
                for descriptor in taken { close(descriptor) }
                print("replace: \(replaced.map { _ in "written" }.mapError { $0 as NSError }), \((try? manager.contentsOfDirectory(atPath: folder.path).sorted()) ?? [])")
                print("short: \(onDisk())")

                // The next request's look at the jar writes again what failed for now.
                jar.writeAgainIfItFailed()
                jar.waitForWrites()
                print("after: \(onDisk())")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == [
            "before: [\"dark\"], [\"cookies.json\"]",
            "replace: failure(Error Domain=NSPOSIXErrorDomain Code=24 \"Too many open files\"), [\"cookies.json\"]",
            "short: [\"dark\"], [\"cookies.json\"]",
            "after: [\"dark\", \"fresh\"], [\"cookies.json\"]",
        ], "\(printed)")
    }
    #endif
}
