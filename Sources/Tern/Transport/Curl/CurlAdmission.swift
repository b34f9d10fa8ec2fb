#if os(Linux)
/// Which exchanges a loop lets libcurl run: at most ``limit`` at once to one plain-HTTP origin,
/// the rest waiting their turn in the order they came.
///
/// Over plain HTTP every transfer running is a connection, and libcurl's own cap
/// (`CURLMOPT_MAX_HOST_CONNECTIONS`, which Tern sets too) was seen to open hundreds at once when
/// the server was slow to answer, running a process out of descriptors. Counting transfers here
/// holds the cap whatever libcurl does. HTTPS is left to libcurl's cap: there requests share an
/// HTTP/2 connection, and counting transfers would cap its streams. A value the loop thread
/// alone holds; unit-tested without libcurl.
struct CurlAdmission<Exchange: AnyObject> {
    /// The most exchanges running at once to one origin.
    let limit: Int
    private var running: [String: Int] = [:]
    private var waiting: [String: [Exchange]] = [:]

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether `exchange`, to `origin` (nil for one not counted), may run now; counted if so,
    /// else it waits.
    mutating func admit(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin else { return true }
        if running[origin, default: 0] < limit, waiting[origin] == nil {
            running[origin, default: 0] += 1
            return true
        }
        waiting[origin, default: []].append(exchange)
        return false
    }

    /// An exchange to `origin` that ran has ended: the next one waiting for it, which now runs
    /// (counted), if any.
    mutating func release(origin: String?) -> Exchange? {
        guard let origin else { return nil }
        if var queue = waiting[origin], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[origin] = queue.isEmpty ? nil : queue
            return next
        }
        running[origin, default: 1] -= 1
        if running[origin] == 0 { running[origin] = nil }
        return nil
    }

    /// Takes `exchange` out of the line (cancelled before it ran); whether it was waiting.
    mutating func withdraw(_ exchange: Exchange, origin: String?) -> Bool {
        guard let origin, var queue = waiting[origin], let index = queue.firstIndex(where: { $0 === exchange }) else { return false }
        queue.remove(at: index)
        waiting[origin] = queue.isEmpty ? nil : queue
        return true
    }

    /// How many exchanges run to `origin`, counted here.
    func runningCount(to origin: String) -> Int { running[origin] ?? 0 }
}
#endif
