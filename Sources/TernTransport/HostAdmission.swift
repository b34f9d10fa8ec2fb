import Foundation

/// Which exchanges a transport lets run: at most ``limit`` at once to one plain-HTTP origin,
/// the rest waiting their turn in the order they came.
///
/// Over plain HTTP every transfer running is a connection. libcurl's own cap
/// (`CURLMOPT_MAX_HOST_CONNECTIONS`, which Tern sets too) was seen to open hundreds at once when
/// the server was slow to answer, running a process out of descriptors; and FoundationNetworking
/// on Linux takes every task at once, and cancelling thousands of them when they time out kept
/// both cores busy for a second, delaying every callback. Counting transfers here holds the cap,
/// and a request that times out while it waits costs nothing. HTTPS is left to the library's
/// cap: there requests share an HTTP/2 connection, and counting transfers would cap its streams.
/// A value its owner guards; unit-tested without a transport.
struct HostAdmission<Exchange: AnyObject> {
    /// The most exchanges running at once to one origin.
    let limit: Int
    private var running: [String: Int] = [:]
    private var waiting: [String: [Exchange]] = [:]
    /// The origins running ``limit`` exchanges: one more to them would wait.
    private(set) var fullOrigins: Set<String> = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether `exchange`, to `origin` (nil for one not counted), may run now; counted if so,
    /// else it waits.
    mutating func admit(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin else { return true }
        if running[origin, default: 0] < limit, waiting[origin] == nil {
            running[origin, default: 0] += 1
            if running[origin] == limit { fullOrigins.insert(origin) }
            return true
        }
        waiting[origin, default: []].append(exchange)
        return false
    }

    /// An exchange to `origin` that ran has ended: the next one waiting for it, which now runs
    /// (counted), if any.
    mutating func release(origin: String?) -> Exchange? {
        guard let origin else { return nil }
        // In place: a copy of a line thousands long, per request, was most of a cancel's cost.
        if let next = waiting[origin]?.removeFirst() {
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
            return next
        }
        running[origin, default: 1] -= 1
        if running[origin] == 0 { running[origin] = nil }
        fullOrigins.remove(origin)
        return nil
    }

    /// Takes `exchange` out of the line (cancelled before it ran); whether it was waiting.
    mutating func withdraw(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin, let index = waiting[origin]?.firstIndex(where: { $0 === exchange }) else { return false }
        waiting[origin]?.remove(at: index)
        if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
        return true
    }

    /// How many exchanges run to `origin`, counted here.
    func runningCount(to origin: String) -> Int { running[origin] ?? 0 }
}

extension URL {
    /// The origin a request here is counted against by ``HostAdmission``: "host:port" for plain
    /// HTTP, else `nil`.
    var admissionOrigin: String? {
        guard scheme?.lowercased() == "http" else { return nil }
        return "\(host?.lowercased() ?? ""):\(port ?? 80)"
    }
}
