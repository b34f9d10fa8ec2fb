import Foundation
import TernTransport

/// Where an API keeps the cookies servers set, in memory, following RFC 6265bis as browsers do:
/// set from each response's `Set-Cookie` fields, and sent back with the requests they match.
///
/// What a browser refuses, the jar refuses: a cookie for a public suffix (`Domain=co.uk`,
/// `Domain=com`, a bare `Domain=example`) or for a domain the host is not in; one for an IP
/// address set by another host; a field with a control character (CR, VT, DEL); a `Secure`
/// cookie, or one that would shadow a `Secure` one, from plain `http`; `__Secure-` and `__Host-`
/// names without what their prefix demands (for `__Host-`, `Path=/` written out and no `Domain`);
/// `SameSite=None` without `Secure`. `Max-Age` (which wins) and `Expires` are honoured,
/// and `Max-Age=0` deletes; no cookie lasts past 400 days. Paths match against the path the
/// request sends, percent-encoded and without dot segments: a cookie for `/admin` goes neither
/// to `/%61dmin` nor to `/admin/../public`. An IP address is one host however a URL spells it
/// (`127.1` is `127.0.0.1`), as libcurl reads it. It keeps at most `maximumPerDomain` cookies
/// per domain and `maximumCount` in all, dropping the least recently set first.
///
/// The public suffix list is the system's (libpsl, which libcurl links on Linux). Where there is
/// none, a cookie never goes further than the host that set it: its `Domain` is honoured only
/// when it is that host.
///
/// Each API gets a jar of its own, in memory, unless its configuration shares one. A jar made
/// with a file keeps its cookies there across launches: those with an expiry (a cookie without
/// one lasts as long as the jar, as a browser's lasts as long as its session), written whole
/// and atomically (readable by the user alone) after each change, before the promise of the
/// request whose answer made it settles. A file another user owns is not read.
///
/// ```swift
/// let jar = CookieJar()
/// let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", cookies: .shared(jar)))
/// print(jar.all)
/// ```
public final class CookieJar: Sendable {
    /// The most cookies kept for one domain (RFC 6265bis asks for at least 50).
    package let maximumPerDomain: Int
    /// The most cookies kept in all (RFC 6265bis asks for at least 3,000).
    package let maximumCount: Int

    /// The file the jar keeps its cookies in, if any.
    package let file: URL?

    /// The cookies, by the domain (or host) each goes to.
    private let store = Locked([String: [Cookie]]())
    /// Writes the file, one version after another; the count of changes so far, and of the
    /// version written last, so that a late older version never replaces a newer one.
    private let writer = DispatchQueue(label: "tern.cookies")
    /// Whether the last write failed for want of a descriptor or of room on the disk: tried
    /// again at the next request; whether a write has removed what earlier ones cut short left;
    /// and how the writes wait for another holder of the folder's lock.
    private let versions = Locked((made: 0, written: 0, failedForNow: false, sweptLeftovers: false, wait: LockWait()))
    /// What the jar read from its file or wrote there last, to write only its own changes over
    /// what another jar on the file wrote meanwhile; touched on ``writer`` alone after `init`.
    private let merge: Locked<CookieFileMerge>

    /// Creates a jar, empty or with the cookies `file` holds.
    ///
    /// - Parameters:
    ///   - file: Where to keep cookies across launches; `nil` (the default) for memory alone. A
    ///     file there that is no jar's is neither read nor written over, and the jar keeps its
    ///     cookies in memory alone: one that cannot be read as a jar's (a document named by
    ///     mistake), that another user owns, that is no regular file, or that is longer than a
    ///     jar of `maximumCount` cookies writes (8 KiB a cookie). A directory missing on the
    ///     way to it is made at the first write. Jars in several launches (or processes) may
    ///     share the file: each writes what it changed over what the file holds then, under a
    ///     lock on the folder, and keeps what the others set or deleted.
    ///   - maximumPerDomain: The most cookies kept for one domain.
    ///   - maximumCount: The most cookies kept in all.
    public init(file: URL? = nil, maximumPerDomain: Int = 50, maximumCount: Int = 3000) {
        self.file = file
        self.maximumPerDomain = maximumPerDomain
        self.maximumCount = maximumCount
        let now = Date()
        var saved: [Cookie] = []
        if let file, case .cookies(let cookies) = CookieFile.read(file, largest: CookieFile.largest(holding: maximumCount)) {
            saved = cookies.filter { $0.expires.map { $0 > now } ?? false }
        }
        merge = Locked(CookieFileMerge(read: saved))
        // Within the limits, the most recently set: jars of other launches on the file wrote
        // theirs within their own, and the file holds them all.
        var perDomain: [String: Int] = [:]
        var kept: [Cookie] = []
        for cookie in saved.sorted(by: { $0.lastSet > $1.lastSet })
        where kept.count < maximumCount && perDomain[cookie.domain, default: 0] < maximumPerDomain {
            perDomain[cookie.domain, default: 0] += 1
            kept.append(cookie)
        }
        store.withLock { store in
            // Each domain's list in the order its cookies were set, as `keep` leaves it.
            for cookie in kept.reversed() {
                store[cookie.domain, default: []].append(cookie)
            }
        }
    }

    /// Every cookie the jar holds that has not expired.
    public var all: [Cookie] {
        let now = Date()
        return store.withLock { $0.values.flatMap { $0.filter { $0.expires.map { $0 > now } ?? true } } }
    }

    /// The cookies that go with a request to `url`, in the order they are sent.
    public func cookies(for url: URL) -> [Cookie] {
        cookies(for: url, at: Date())
    }

    /// Whether the jar holds no cookie: a request then looks nothing up.
    package var isEmpty: Bool {
        store.withLock { $0.isEmpty }
    }

    /// Forgets every cookie; the jar's file then keeps only those another jar on it sets.
    public func removeAll() {
        store.withLock { $0.removeAll() }
        save()
    }

    /// Keeps what the `Set-Cookie` fields of a response to `url` set, each field read on its own.
    package func setCookies(from fields: [String], for url: URL) {
        setCookies(from: fields, for: url, at: Date())
    }

    // MARK: With the time given, for the tests

    func cookies(for url: URL, at now: Date) -> [Cookie] {
        guard let host = url.canonicalHost, !host.isEmpty else { return [] }
        let path = Cookie.requestPath(of: url)
        let isSecure = url.scheme?.lowercased() == "https"
        let domains = Self.domains(of: host)
        let found = store.withLock { store in
            domains.flatMap { store[$0] ?? [] }.filter { $0.goes(to: host, path: path, isSecure: isSecure, at: now) }
        }
        // Longer paths first, then older cookies (section 5.8.3).
        return found.sorted { ($0.path.count, $1.created) > ($1.path.count, $0.created) }
    }

    /// Writes the file again if its last write found no descriptor free, or no room: the
    /// process may be less busy now, the disk freed. Otherwise what changed meanwhile (a
    /// sign-out that emptied the jar too) waited for the next change, lost if the app quit first.
    func writeAgainIfItFailed() {
        if file != nil, versions.withLock({ versions in defer { versions.failedForNow = false }; return versions.failedForNow }) { save() }
    }

    /// The `Cookie` field for a request to `url`, if any cookie goes with it.
    func headerValue(for url: URL) -> String? {
        writeAgainIfItFailed()
        let cookies = cookies(for: url, at: Date())
        return cookies.isEmpty ? nil : cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    func setCookies(from fields: [String], for url: URL, at now: Date) {
        guard let host = url.canonicalHost, !host.isEmpty else { return }
        let path = Cookie.requestPath(of: url)
        let isSecure = url.scheme?.lowercased() == "https"
        var changed = false
        for field in fields {
            guard let parsed = Cookie(parsing: field, host: host, path: path, now: now),
                  let cookie = Self.admitted(parsed, host: host, isSecure: isSecure) else { continue }
            store.withLock { store in keep(cookie, from: isSecure, in: &store, at: now) }
            changed = true
        }
        if changed { save() }
    }

    /// Writes the cookies that outlive a session to ``file``, if the jar has one.
    private func save() {
        guard file != nil else { return }
        let version = versions.withLock { versions in
            versions.made += 1
            return versions.made
        }
        writer.async { [self] in write(upTo: version, retrying: false) }
    }

    /// Writes the file, on ``writer``, with the changes up to `version` at least, under the
    /// folder's lock, which another jar on the file (in this process or another) takes too: none
    /// then writes over what another wrote. A write that finds it held is tried again a second
    /// later, with the changes made meanwhile, and without the lock only once it has waited
    /// ``LockWait/longestWait`` (``LockWait``).
    private func write(upTo version: Int, retrying: Bool) {
        guard let file else { return }
        let patience = versions.withLock { versions -> TimeInterval? in
            guard retrying ? versions.wait.retryCame() : versions.written < version else { return nil }
            return versions.wait.nextPatience
        }
        guard let patience else { return }
        let (folder, tried) = DirectoryLock.take(file.deletingLastPathComponent(), patience: patience)
        defer { folder?.unlock() }
        let (next, retry) = versions.withLock { $0.wait.tried(tried) }
        if retry {
            writer.asyncAfter(deadline: .now() + 1) { [self] in write(upTo: 0, retrying: true) }
        }
        guard next != .wait else { return }
        // Read when written: a later change's own write comes after, with what it changed.
        let version = versions.withLock { $0.made }
        let lasting = all.filter { $0.expires != nil }
        if folder != nil, versions.withLock({ versions in defer { versions.sweptLeftovers = true }; return !versions.sweptLeftovers }) {
            // Those a minute old: one that gave up waiting for the lock writes without it.
            OwnFiles.removeAbandonedTemporaries(of: file, after: 60)
        }
        var written = Written.failed
        for attempt in 1...3 {
            // Stamped before it is read, and not replaced if another wrote it since (one that
            // wrote past this jar while it was stopped holding the lock), but merged again; the
            // third time written regardless.
            let read = FileStamp(of: file.path)
            let onDisk: [Cookie]
            switch CookieFile.read(file, largest: CookieFile.largest(holding: maximumCount)) {
            case .cookies(let cookies): onDisk = cookies
            case .unreadableForNow: return versions.withLock { $0.failedForNow = true }
            case .notAJars: return versions.withLock { $0.written = max($0.written, version) }   // left alone
            }
            let merged = merge.withLock { $0.merged(holds: lasting, onDisk: onDisk, now: Date()) }
            guard let data = try? JSONEncoder().encode(merged) else { return }
            written = Self.write(data, to: file, ifStill: attempt < 3 ? read : nil)
            if written != .changedSinceRead { break }
        }
        guard written != .failedForNow else { return versions.withLock { $0.failedForNow = true } }
        // Written past a holder, the changes are not counted as on disk: the holder's own write,
        // when it goes on, may drop them, and the retry under the lock puts them back.
        if written == .written, next == .write { merge.withLock { $0.wrote(lasting) } }
        // Written, or given up: nothing is left being written (``whenWritten(_:)``).
        versions.withLock { $0.written = max($0.written, version) }
    }

    /// Writes `data` to `file` whole or not at all, readable by the user alone from the start
    /// (cookies are credentials): into a new file beside it, then renamed over it. Its directory
    /// was made (for the user alone) with its lock (``DirectoryLock``), if it was missing.
    /// Not if the file is no longer as `read` stamped it.
    private static func write(_ data: Data, to file: URL, ifStill read: FileStamp?) -> Written {
        do {
            try OwnFiles.replace(file, with: data, mode: 0o600, synchronized: true, ifStill: read)
            return .written
        } catch {
            return Written(failure: error)
        }
    }

    /// What a write of the file did.
    private enum Written {
        case written
        /// Nothing, for now: the process or the system had no descriptor free, or the disk no
        /// room.
        case failedForNow
        case failed
        /// Nothing: the file changed since it was read.
        case changedSinceRead

        /// Failed with `failure`: for now when it says what was lacking may come back (a
        /// descriptor, room on the disk), as creating the file or writing it may say.
        init(failure: any Error) {
            if failure is OwnFiles.ChangedSinceRead {
                self = .changedSinceRead
                return
            }
            self = OwnFiles.lackedADescriptor(failure) || OwnFiles.lackedRoom(failure) ? .failedForNow : .failed
        }
    }

    /// Runs `body` on the jar's own queue once what has changed so far is written to ``file``
    /// (or its write waits for the folder's lock, or failed), and returns `true`; or returns
    /// `false` and runs nothing when nothing is being written.
    package func whenWritten(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard file != nil, versions.withLock({ $0.written < $0.made }) else { return false }
        writer.async(execute: body)
        return true
    }

    /// Waits until what has changed is written to ``file``, or waits for the folder's lock.
    func waitForWrites() {
        writer.sync {}
    }

    // MARK: The storage model (RFC 6265bis, section 5.7)

    /// The cookie as it may be stored for `host`, or `nil` when it is refused.
    private static func admitted(_ cookie: Cookie, host: String, isSecure: Bool) -> Cookie? {
        var cookie = cookie
        if !cookie.isHostOnly {
            if cookie.domain == host {
                // `Domain` naming the host itself: host-only where the host is a public suffix or
                // an address, or no list says which hosts are.
                if Cookie.isIPAddress(host) || PublicSuffixList.isPublicSuffix(host) { cookie = cookie.hostOnly(for: host) }
            } else if Cookie.isIPAddress(host) || !Cookie.host(host, matches: cookie.domain)
                        || !PublicSuffixList.acceptsCookie(from: host, for: cookie.domain) {
                return nil
            }
        }
        if cookie.isSecure, !isSecure { return nil }
        return cookie
    }

    /// Stores `cookie` in place of the one of its name, domain and path, or deletes that one if
    /// `cookie` has expired; then holds the jar to its limits.
    private func keep(_ cookie: Cookie, from isSecure: Bool, in store: inout [String: [Cookie]], at now: Date) {
        // From plain http, no cookie may take the place of (or shadow) a Secure one.
        if !isSecure, store.values.contains(where: { list in list.contains { $0.isSecure && $0.isShadowed(by: cookie) } }) { return }
        var list = store[cookie.domain] ?? []
        var kept = cookie
        if let index = list.firstIndex(where: { $0.name == cookie.name && $0.path == cookie.path && $0.isHostOnly == cookie.isHostOnly }) {
            kept = cookie.replacing(oneCreatedAt: list[index].created)
            list.remove(at: index)
        }
        list.removeAll { $0.expires.map { $0 <= now } ?? false }
        if let expires = cookie.expires, expires <= now {
            store[cookie.domain] = list.isEmpty ? nil : list
            return
        }
        list.append(kept)
        // The least recently set go first (each list is in the order its cookies were set).
        if list.count > maximumPerDomain { list.removeFirst(list.count - maximumPerDomain) }
        store[cookie.domain] = list
        var count = store.values.reduce(0) { $0 + $1.count }
        while count > maximumCount, let oldest = store.min(by: { ($0.value.first?.lastSet ?? .distantFuture) < ($1.value.first?.lastSet ?? .distantFuture) }) {
            var trimmed = oldest.value
            trimmed.removeFirst()
            store[oldest.key] = trimmed.isEmpty ? nil : trimmed
            count -= 1
        }
    }

    /// The host and each domain above it: where cookies for `host` may be kept.
    private static func domains(of host: String) -> [String] {
        guard !Cookie.isIPAddress(host) else { return [host] }
        var domains = [host]
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if !rest.isEmpty { domains.append(String(rest)) }
        }
        return domains
    }
}
