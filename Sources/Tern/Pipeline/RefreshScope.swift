/// The credential refresh that the code running now belongs to: bound while a delegate's
/// ``APIDelegate/refreshCredentials(for:)`` runs, and inherited by the tasks it starts (a
/// `Promise { … }` with an async body is one).
///
/// A request made there for an API of the same delegate is the refresh's own: held for the
/// refresh, it would wait for itself until it timed out. It goes as if sent with
/// `RequestOptions(authenticates: false)`.
enum RefreshScope {
    /// The coordinator whose refresh is running here, if any.
    @TaskLocal static var coordinator: ObjectIdentifier?

    /// Whether a request of `api` made here is part of the refresh of its own delegate.
    static func isRefreshing(for api: AbstractAPI) -> Bool {
        guard let running = coordinator, let signer = api.signer else { return false }
        return ObjectIdentifier(signer.refresher) == running
    }
}
