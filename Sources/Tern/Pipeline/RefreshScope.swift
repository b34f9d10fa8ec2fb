/// The credential refresh that the code running now belongs to: bound while a delegate's
/// ``APIDelegate/refreshCredentials(for:)`` runs, and inherited by the tasks it starts (a
/// `Promise { … }` with an async body is one).
///
/// A request made there for an API of the same delegate is the refresh's own: held for the
/// refresh, it would wait for itself until it timed out. It goes as if sent with
/// `RequestOptions(authenticates: false)`.
///
/// A task it starts keeps the value for good, past the refresh's end (work handed off for
/// later): so the value names the refresh, and a request is its own only while that refresh
/// is the one in flight. Later, it is signed like any other.
enum RefreshScope {
    /// The refresh running here, if any: the promise every request waiting for it holds (held,
    /// not named by address, which a later refresh's promise could take).
    @TaskLocal static var refresh: Promise<Void>?

    /// Whether a request of `api` made here is part of the refresh of its own delegate, still
    /// running.
    static func isRefreshing(for api: AbstractAPI) -> Bool {
        guard let running = refresh, let inFlight = api.signer?.refresher.inFlight else { return false }
        return inFlight === running
    }
}
