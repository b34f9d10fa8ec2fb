import Foundation

/// Which exchanges a transport lets run: at most ``limit`` at once to one plain-HTTP origin and
/// ``totalLimit`` to all of them together, the rest waiting their turn in the order they came.
///
/// Over plain HTTP every transfer running is a connection. libcurl's own cap
/// (`CURLMOPT_MAX_HOST_CONNECTIONS`, which Tern sets too) was seen to open hundreds at once when
/// the server was slow to answer, running a process out of descriptors; and FoundationNetworking
/// on Linux takes every task at once, and cancelling thousands of them when they time out kept
/// both cores busy for a second, delaying every callback. Counting transfers here holds the cap,
/// and a request that times out while it waits costs nothing. HTTPS is left to the library's
/// caps, per host and in total: there requests share an HTTP/2 connection, and counting
/// transfers would cap its streams.
/// The total holds the descriptors in use when requests go to many origins at once: without it,
/// most such requests failed for want of a socket, reported as a refused connection. A value its owner guards; unit-tested without a transport.
struct HostAdmission<Exchange: AnyObject> {
    /// The most exchanges running at once to one origin.
    let limit: Int
    /// The most running at once to all counted origins together.
    let totalLimit: Int
    private var running: [String: Int] = [:]
    private var totalRunning = 0
    private var waiting: [String: [Exchange]] = [:]
    /// The origin of each exchange that came while the total was reached, in the order they
    /// came: who runs when an exchange to another origin ends. Entries whose origin has since
    /// no one waiting, or is at its own limit (its own ends serve it), are passed over.
    private var blockedByTotal: [String] = []
    private var nextBlocked = 0
    /// The origins running ``limit`` exchanges: one more to them would wait.
    private(set) var fullOrigins: Set<String> = []

    /// How many exchanges run at once to all origins together unless a transport says otherwise.
    static var defaultTotalLimit: Int { 64 }   // as many requests as OkHttp runs at once

    init(limit: Int, totalLimit: Int = Self.defaultTotalLimit) {
        self.limit = max(1, limit)
        self.totalLimit = max(self.limit, totalLimit)
    }

    /// Whether every counted origin's next exchange would wait: the total is reached.
    var isFull: Bool { totalRunning >= totalLimit }

    /// Whether `exchange`, to `origin` (nil for one not counted), may run now; counted if so,
    /// else it waits.
    mutating func admit(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin else { return true }
        // Below the total no one waits for it: each end below it ran whoever did.
        if running[origin, default: 0] < limit, waiting[origin] == nil, !isFull {
            count(origin)
            return true
        }
        if running[origin, default: 0] < limit { blockedByTotal.append(origin) }
        waiting[origin, default: []].append(exchange)
        return false
    }

    private mutating func count(_ origin: String) {
        running[origin, default: 0] += 1
        totalRunning += 1
        if running[origin] == limit { fullOrigins.insert(origin) }
    }

    /// An exchange to `origin` that ran has ended: the next one waiting for it, which now runs
    /// (counted), if any.
    mutating func release(origin: String?) -> Exchange? {
        guard let origin else { return nil }
        if let next = takeWaiting(for: origin) { return next }
        running[origin, default: 1] -= 1
        if running[origin] == 0 { running[origin] = nil }
        totalRunning -= 1
        fullOrigins.remove(origin)
        // The total has a place again: the first that waited for it, at another origin.
        while nextBlocked < blockedByTotal.count {
            let other = blockedByTotal[nextBlocked]
            nextBlocked += 1
            if running[other, default: 0] < limit, let next = takeWaiting(for: other) {
                count(other)
                compactBlocked()
                return next
            }
        }
        compactBlocked()
        return nil
    }

    /// The first exchange waiting for `origin`, taken out of the line.
    private mutating func takeWaiting(for origin: String) -> Exchange? {
        // The line moved out and back, not changed through the dictionary's subscript: that made
        // three allocations per request on the loop's thread. Moved, it is changed in place (a
        // copy of a line thousands long, per request, was most of a cancel's cost).
        guard var line = waiting.removeValue(forKey: origin) else { return nil }
        let next = line.removeFirst()
        if !line.isEmpty { waiting[origin] = line }
        return next
    }

    /// Drops the entries passed over, once they are half the list.
    private mutating func compactBlocked() {
        guard nextBlocked > 32, nextBlocked * 2 >= blockedByTotal.count else { return }
        blockedByTotal.removeFirst(nextBlocked)
        nextBlocked = 0
    }

    /// Takes `exchange` out of the line (cancelled before it ran); whether it was waiting.
    mutating func withdraw(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin, let index = waiting[origin]?.firstIndex(where: { $0 === exchange }) else { return false }
        waiting[origin]?.remove(at: index)
        if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
        return true
    }

    /// Whether `exchange` waits in `origin`'s line.
    func isWaiting(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin else { return false }
        return waiting[origin]?.contains { $0 === exchange } ?? false
    }

    /// How many exchanges run to `origin`, counted here.
    func runningCount(to origin: String) -> Int { running[origin] ?? 0 }
}

extension URL {
    /// The origin a request here is counted against by ``HostAdmission``: "host:port" for plain
    /// HTTP, else `nil`.
    var admissionOrigin: String? {
        guard scheme?.lowercased() == "http" else { return nil }
        return "\(canonicalHost ?? ""):\(port ?? 80)"
    }
}
