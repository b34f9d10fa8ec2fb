#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TernTransport

/// What a cookie jar's file holds, read as the jar reads it before each write.
enum CookieFile {
    /// What was found at the jar's path.
    enum Contents {
        /// A jar's cookies; none where nothing is there, or an empty file.
        case cookies([Cookie])
        /// Nothing, for now: no descriptor was free to read it.
        case unreadableForNow
        /// A file that is no jar's: a user's file named by mistake (a document, a disk image),
        /// another user's, or no regular file. The jar neither reads it nor writes over it.
        case notAJars
    }

    /// The contents of `file`, read if it is a regular file of this user's own no longer than
    /// `largest`. Another user's (one put there first, in a folder others may write to) would
    /// log the app in to an account of that user's choosing; a pipe's open would wait for a
    /// writer, and a device such as `/dev/zero` never ends.
    static func read(_ file: URL, largest: Int) -> Contents {
        let opened: RegularFile
        do {
            opened = try RegularFile(file)
        } catch let error as NSError where error.domain == NSPOSIXErrorDomain && error.code == Int(ENOENT) {
            return .cookies([])
        } catch {
            return OwnFiles.lackedADescriptor(error) ? .unreadableForNow : .notAJars
        }
        let (size, owner) = (opened.size, opened.owner)
        opened.close()
        guard owner == getuid(), size <= largest else { return .notAJars }
        guard size > 0 else { return .cookies([]) }
        guard let data = RegularFile.ownContents(of: file, largest: largest) else { return .unreadableForNow }
        guard let cookies = try? JSONDecoder().decode([Cookie].self, from: data) else { return .notAJars }
        return .cookies(cookies)
    }

    /// The longest file a jar of `count` cookies writes, with room to spare: a name and value
    /// take 4 KiB at most (RFC 6265bis, section 5.6), and each cookie's other members less. A
    /// longer file is no jar's (a disk image named by mistake), and is not read into memory.
    static func largest(holding count: Int) -> Int {
        max(count, 1) * (8 << 10)
    }
}
