import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A private HTTP cache that follows RFC 9111, as a browser's or OkHttp's does: an API given one
/// (`APIConfiguration.cache`) answers a `GET` from it while the kept response is fresh, asks
/// the server whether it is still good once it is stale (`If-None-Match`, `If-Modified-Since`;
/// a `304` refreshes it), and forgets a URL once a `POST`, `PUT`, `PATCH` or `DELETE` to it
/// succeeds. Each response says what the cache did (`Response.cacheOutcome`, ``CacheOutcome``).
///
/// ```swift
/// let cache = HTTPCache(maximumBytes: 20 << 20)                                   // in memory
/// let kept = try HTTPCache(directory: cachesDirectory.appendingPathComponent("shop"))   // on disk
/// let cached = APIConfiguration(baseURL: "https://shop.example/api/v2", cache: cache)
/// ```
///
/// It works the same over every transport, since it sits above them. One cache may serve
/// several APIs: each is answered only with what was fetched with its credentials, pins and
/// trusted authorities (see <doc:CachingResponses>). A response to a request that carries
/// `Authorization` (a bearer token, say) is kept only when it says it may be shared
/// (`public`, `must-revalidate`, `s-maxage`) and not `private`, as a shared cache keeps one: a cache on disk can
/// outlast the account that filled it. Its clock says how old a response is: the wall clock by default (a monotonic
/// one stops while a device sleeps, and would keep a response fresh through the night); a
/// `TestClock` moves it in tests.
public final class HTTPCache: Sendable {
    private let store: Locked<CacheStore>
    /// The largest response body kept, in bytes.
    package let maximumResponseBytes: Int
    /// The clock given, if any, its reading and the date at the cache's start: the cache's dates
    /// are then that clock's time since, so that a test clock moves them.
    private let clock: (any APIClock)?
    private let start: (now: TimeInterval, date: Date)

    /// A cache in memory, of at most `maximumBytes` (20 MiB by default), keeping bodies of up to
    /// `maximumResponseBytes` (2 MiB): the same defaults as on disk.
    public init(maximumBytes: Int = 20 << 20, maximumResponseBytes: Int = 2 << 20, clock: (any APIClock)? = nil) {
        store = Locked(CacheStore(limit: maximumBytes))
        self.maximumResponseBytes = maximumResponseBytes
        self.clock = clock
        start = (clock?.now ?? 0, Date())
    }

    /// A cache in `directory` (made if missing, for the user alone), of at most `maximumBytes` on disk (20 MiB by
    /// default), what is there from earlier runs included, keeping bodies of up to
    /// `maximumResponseBytes` (2 MiB): the same defaults as in memory. It touches only the files it writes (named by a hash, ending
    /// in `.terncache`), never the others in `directory`; another cache may share it. A file
    /// there that another user owns is never an answer.
    ///
    /// - Throws: The file system's error when the directory cannot be made or read.
    public init(directory: URL, maximumBytes: Int = 20 << 20, maximumResponseBytes: Int = 2 << 20, clock: (any APIClock)? = nil) throws {
        store = Locked(try CacheStore(directory: directory, limit: maximumBytes))
        self.maximumResponseBytes = maximumResponseBytes
        self.clock = clock
        start = (clock?.now ?? 0, Date())
    }

    /// The bytes the cache holds.
    package var byteCount: Int { store.withLock { $0.byteCount } }

    /// How many damaged files were found, dropped and not served.
    package var corruptEntriesDropped: Int { store.withLock { $0.corruptEntriesDropped } }

    /// How many times a response was looked for, in memory or on disk.
    package var lookupCount: Int { store.withLock { $0.finds } }

    /// Forgets every response.
    public func removeAll() {
        store.withLock { $0.removeAll() }
    }

    // MARK: For the caching transport

    /// Now, by the cache's clock.
    var now: Date {
        guard let clock else { return Date() }
        return start.date.addingTimeInterval(clock.now - start.now)
    }

    /// What is kept for `request`'s URL, if its `Vary` fields and its credentials match the
    /// request's, and it was fetched under the same `trust` (see ``varying(_:of:trust:)``).
    func response(for request: URLRequest, trust: String?) -> CachedResponse? {
        request.url.flatMap { Self.matching(stored(for: CacheKey.of($0)), request, trust: trust) }
    }

    /// The largest file the cache would write: any larger one in its directory is not read.
    private var largestFile: Int { maximumResponseBytes + (1 << 20) }

    /// What is kept for `key`, whatever the request's `Vary` fields.
    func stored(for key: String) -> CachedResponse? { storedWrite(for: key)?.response }

    /// What is kept for `key`, and which write of it that is.
    private func storedWrite(for key: String) -> (response: CachedResponse, version: UInt64)? {
        switch store.withLock({ $0.find(key) }) {
        case nil:
            return nil
        case .kept(let response, let version):
            return (response, version)
        case .file(let file, let size, let version):
            // Read and checked outside the lock: other requests look up and keep meanwhile.
            switch CacheFile.read(file, size: size, largest: largestFile) {
            case (.intact(let response), let found):
                // Written whole by another cache on this directory since this one indexed it.
                if found != size { store.withLock { $0.resized(key, version: version, to: found) } }
                // Another URL whose file has the same name is not this one's.
                return response.url == key ? (response, version) : nil
            case (.unopened, _):
                // Not damaged: the request goes on as if nothing were kept, and the file stays.
                return nil
            case (let reading, _):
                store.withLock { $0.unreadable(key, version: version, damaged: reading == .damaged, foreign: reading == .foreign || reading == .tooLarge) }
                return nil
            }
        }
    }

    /// `kept`, if the request's values of the fields its `Vary` names are those it was kept for,
    /// and its credentials (cookies, `Authorization`, a URL's user and password) and `trust`
    /// those it was kept for, if it was kept for any: what a server answered a request without
    /// them it answered not knowing who asked, and what a server answered over a connection
    /// trusted less is not served to a request that trusts less of them. Before the request is
    /// signed its credentials (and pins) are not known yet, and not compared.
    static func matching(_ kept: CachedResponse?, _ request: URLRequest, trust: String?, comparingCredentials: Bool = true) -> CachedResponse? {
        kept.flatMap { kept in
            var (asked, expected) = (varying(kept.varyNames, of: request, trust: trust), kept.varying)
            for name in credentials where !comparingCredentials || expected[name] == nil {
                (asked[name], expected[name]) = (nil, nil)
            }
            if !comparingCredentials { (asked[trustName], expected[trustName]) = (nil, nil) }
            return expected == asked ? kept : nil
        }
    }

    /// The fields that say who asks, matched whatever a response's `Vary` says; the last, not a
    /// field, stands for a URL's user and password, which the transport sends as `Authorization`.
    static let credentials = ["cookie", "authorization", ":userinfo"]

    /// Where `varying` keeps the trust a response was fetched under, when it was not the
    /// default: a name no field can have.
    static let trustName = ":trust"

    /// Keeps `response` for its URL: on disk, written outside the lock, then moved into place
    /// under it.
    func store(_ response: CachedResponse) {
        store(response, ifStill: nil)
    }

    /// Keeps `response`, `original` as a `304` or a `HEAD` updated it, if `original` is still
    /// what is kept for its URL: an answer that came late about an older response never
    /// writes it back over a newer one another request kept meanwhile (RFC 9111, §4.3.4
    /// updates only the responses the answer's validators select).
    func update(_ original: CachedResponse, to response: CachedResponse) {
        // Read again rather than trusted to the version alone: another cache on the same
        // directory writes the file without this one's index knowing.
        guard let now = storedWrite(for: original.url), now.response == original else { return }
        store(response, ifStill: now.version)
    }

    private func store(_ response: CachedResponse, ifStill version: UInt64?) {
        let key = response.url
        guard let destination = store.withLock({ $0.file(for: key) }) else {
            return store.withLock { $0.keep(response, for: key, ifStill: version) }
        }
        let data = CacheFile.encode(response)
        guard let temporary = try? CacheFile.writeTemporary(data, beside: destination) else {
            return store.withLock { $0.remove(key) }
        }
        _ = store.withLock { $0.place(temporary, size: data.count, for: key, requestDate: response.requestDate, ifStill: version) }
    }

    /// Forgets what is kept for each of `keys`.
    func remove(_ keys: [String]) {
        store.withLock { store in keys.forEach { store.remove($0) } }
    }

    /// The request's value of each of `names`, as a digest, "" for those it lacks; its credentials, those
    /// it sends, whether `Vary` names them or not, as digests: a response to a request with
    /// credentials is served only to requests with the same, so that one kept for an account is
    /// never another's (servers that sign in often say only `private`, which a browser, used by
    /// one person, takes as enough), and no cookie, token or password is written to disk; and
    /// `trust`, the pins and authorities the request was sent under, when not the default.
    static func varying(_ names: [String], of request: URLRequest, trust: String?) -> [String: String] {
        // As digests too: a field `Vary` names may carry a key of the caller's (`X-API-Key`).
        var values = Dictionary(names.map { ($0, request.value(forHTTPHeaderField: $0).map { digest(of: $0.trimmingSpace()) } ?? "") },
                                uniquingKeysWith: { first, _ in first })
        for name in credentials {
            if let value = credential(name, of: request) { values[name] = digest(of: value) }
        }
        if let trust { values[trustName] = digest(of: trust) }
        return values
    }

    /// The request's value of the credential `name` (see ``credentials``), if it has one.
    static func credential(_ name: String, of request: URLRequest) -> String? {
        guard name == ":userinfo" else { return request.value(forHTTPHeaderField: name) }
        guard let url = request.url, url.user != nil || url.password != nil else { return nil }
        return (url.user ?? "") + ":" + (url.password ?? "")
    }

    /// A digest of `text` that stays the same across launches (SHA-256, in hex): no credential
    /// can be made to pass for another's, and a file gives one back only to a guess.
    static func digest(of text: String) -> String {
        "sha256:" + SHA256Digest.hex(Data(text.utf8))
    }
}
