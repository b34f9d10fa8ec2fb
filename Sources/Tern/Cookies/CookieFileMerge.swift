import Foundation

/// What a jar writes to its file when another jar may write it too (a second launch of the app,
/// two runs of a tool): the file as it is now, with what this jar changed since it last read or
/// wrote it, and nothing else of its own. Written whole from memory, the last jar to write
/// dropped what the other had set (a session cookie the server had just rotated), and brought
/// back what the other had deleted.
struct CookieFileMerge {
    /// Which cookie a stored one stands for: one of each is kept (RFC 6265bis, section 5.7).
    private struct Identity: Hashable {
        let name: String
        let domain: String
        let path: String
        let isHostOnly: Bool

        init(_ cookie: Cookie) {
            (name, domain, path, isHostOnly) = (cookie.name, cookie.domain, cookie.path, cookie.isHostOnly)
        }
    }

    /// The lasting cookies the jar held when it last read or wrote the file.
    private var base: Set<Cookie>

    init(read: [Cookie]) {
        base = Set(read)
    }

    /// The cookies to write, from the lasting ones the jar `holds` and those the file holds now
    /// (`onDisk`): those on disk, less those the jar removed or replaced since, with those it set,
    /// least recently set first; none expired by `now`. Call ``wrote(_:)`` with `holds` once
    /// they are written.
    ///
    /// A cookie that expired in the jar's memory is no change of the jar's: another jar may have
    /// renewed it. And a cookie the jar set without `Secure` never takes the place of (or
    /// shadows) a `Secure` one another jar wrote meanwhile: set from plain `http`, the jar would
    /// have refused it, had it known of the other (RFC 6265bis, section 5.7).
    func merged(holds: [Cookie], onDisk: [Cookie], now: Date) -> [Cookie] {
        let held = Set(holds)
        let othersSecure = onDisk.filter { $0.isSecure && !base.contains($0) }
        let set = held.subtracting(base).filter { cookie in
            cookie.isSecure || !othersSecure.contains { $0.isShadowed(by: cookie) }
        }
        let removed = base.subtracting(held).filter { $0.expires.map { $0 > now } ?? true }
        let changed = Set(removed.map(Identity.init)).union(set.map(Identity.init))
        let kept = onDisk.filter { cookie in !changed.contains(Identity(cookie)) && (cookie.expires.map { $0 > now } ?? false) }
        return (kept + set).sorted { $0.lastSet < $1.lastSet }
    }

    /// `holds` is on disk: the next write's changes are counted from it.
    mutating func wrote(_ holds: [Cookie]) {
        base = Set(holds)
    }
}
