import Foundation

/// The pure state of a delegate's single-flight credential refresh: which refresh runs, which
/// credentials are current, how many refreshes happened lately. No locks, no I/O.
struct RefreshState {
    /// What to do for a request whose credentials were refused.
    enum Decision {
        /// Newer credentials exist than the request was signed with: send it again.
        case replay
        /// A refresh is running: wait for it.
        case join(Promise<Void>)
        /// Start a refresh, settling this promise, which everyone else will join.
        case start(Promise<Void>, Promise<Void>.Resolver)
        /// Too many refreshes lately.
        case refuse(limit: RefreshLimit)
    }

    /// The version of the credentials: it goes up with each successful refresh.
    private(set) var generation = 0
    /// The refresh running now, if any.
    private(set) var inFlight: Promise<Void>?
    /// When counted refreshes happened, oldest first.
    private var recent: [TimeInterval] = []
    /// The longest window a limit asked about: the APIs that share a delegate may each have a
    /// limit of their own, and a short window must not forget what a longer one counts.
    private var longestWindow: TimeInterval = 0

    /// Decides what a request signed with credentials of `signedGeneration` does.
    mutating func decide(signedWith signedGeneration: Int, now: TimeInterval, limit: RefreshLimit) -> Decision {
        if signedGeneration < generation { return .replay }
        if let inFlight { return .join(inFlight) }
        longestWindow = max(longestWindow, limit.window)
        recent.removeAll { now - $0 >= longestWindow }
        guard recent.count(where: { now - $0 < limit.window }) < limit.count else { return .refuse(limit: limit) }
        let (promise, resolver) = Promise<Void>.pending(in: .global())
        inFlight = promise
        return .start(promise, resolver)
    }

    /// Records the end of the running refresh. A refresh that failed on the network does not
    /// count against the limit; a successful one makes newer credentials current.
    mutating func finish(succeeded: Bool, counts: Bool, at now: TimeInterval) {
        inFlight = nil
        if succeeded { generation += 1 }
        if counts { recent.append(now) }
    }
}
