import Foundation

/// Runs a delegate's credential refresh once for every request that needs it (single flight),
/// whichever of the APIs it signs for sent the request.
///
/// It keeps ``RefreshState`` behind a lock; the delegate's refresh is called outside the lock,
/// and its outcome settles the one promise every waiting request holds.
final class RefreshCoordinator: Sendable {
    /// The refresh's state, and the APIs whose refused requests the running refresh is for:
    /// each one's plugins hear how it ended.
    private let state = Locked<(refresh: RefreshState, apis: [AbstractAPI])>((RefreshState(), []))

    /// One delegate's coordinator, while an API holds it.
    private struct Entry: Sendable {
        weak var delegate: (any APIDelegate)?
        weak var coordinator: RefreshCoordinator?
    }

    /// Each delegate's coordinator, for as long as both live: a delegate given to two APIs
    /// (one with a cache, one without) holds one refresh token, which a second refresh would
    /// find spent.
    private static let registry = Locked<(byDelegate: [ObjectIdentifier: Entry], pruneAt: Int)>(([:], 64))

    /// The coordinator of `delegate`: the one the APIs it signs for already share, or a new one.
    static func of(_ delegate: any APIDelegate) -> RefreshCoordinator {
        registry.withLock { registry in
            let id = ObjectIdentifier(delegate)
            if let entry = registry.byDelegate[id], entry.delegate === delegate, let coordinator = entry.coordinator { return coordinator }
            // An identifier outlives its object: entries whose delegate or coordinator has gone
            // are dropped once they may be half, so that each new delegate costs little.
            if registry.byDelegate.count >= registry.pruneAt {
                registry.byDelegate = registry.byDelegate.filter { $0.value.delegate != nil && $0.value.coordinator != nil }
                registry.pruneAt = max(64, 2 * registry.byDelegate.count)
            }
            let coordinator = RefreshCoordinator()
            registry.byDelegate[id] = Entry(delegate: delegate, coordinator: coordinator)
            return coordinator
        }
    }

    /// How many delegates the registry holds an entry for, gone ones not yet dropped included.
    static var registeredDelegates: Int { registry.withLock { $0.byDelegate.count } }

    /// The version of the current credentials, to record when a request is signed.
    var generation: Int { state.withLock { $0.refresh.generation } }

    /// The refresh running now, which new requests wait for before they are signed.
    var inFlight: Promise<Void>? { state.withLock { $0.refresh.inFlight } }

    /// How many APIs asked for the running refresh.
    var askingAPIs: Int { state.withLock { $0.apis.count } }

    /// A promise that settles when credentials newer than `signedGeneration` are current, or
    /// fails with ``APIError/authentication(_:)``.
    func refresh(signedWith signedGeneration: Int, api: AbstractAPI, delegate: any APIDelegate) -> Promise<Void> {
        let limit = api.configuration.refreshLimit
        let decision = state.withLock { state in
            let decision = state.refresh.decide(signedWith: signedGeneration, now: api.clock.now, limit: limit)
            switch decision {
            case .start, .join: if !state.apis.contains(where: { $0 === api }) { state.apis.append(api) }
            case .replay, .refuse: break
            }
            return decision
        }
        switch decision {
        case .replay:
            return Promise(value: (), in: .global())
        case .join(let running):
            return running
        case .refuse(let limit):
            return Promise(error: APIError.authentication(.tooManyRefreshes(limit: limit.count, window: limit.window)), in: .global())
        case .start(let promise, let resolver):
            // A refresh that never settles would hold every later request; it gets the API's
            // timeout, and timing out counts as a network failure, not against the limit.
            let timeout = api.configuration.timeout
            let refresh = RefreshScope.$refresh.withValue(promise) { delegate.refreshCredentials(for: api) }
            let bounded = timeout.isFinite && timeout > 0 ? refresh.timeout(timeout, clock: api.clock) : refresh
            bounded.onResult(in: .global()) { [self] result in
                let networkFailure = if case .failure(let error) = result { Self.isNetworkFailure(error) } else { false }
                let apis = state.withLock { state in
                    state.refresh.finish(succeeded: (try? result.get()) != nil, counts: !networkFailure, at: api.clock.now)
                    defer { state.apis = [] }
                    return state.apis
                }
                for api in apis {
                    api.plugins.forEach { $0.observe(.didRefresh(result.map { _ in () }), api: api.apiContext) }
                }
                resolver.resolve(result.mapError { error in
                    switch error {
                    case APIError.authentication: return error
                    case APIError.timeout(let over) where over.url == nil && over.interval == timeout:
                        // The bound above: say what ran out of time, and the likeliest why.
                        return APIError.authentication(.refreshFailed(APIError.timeout(.init(interval: timeout, waitedForRefresh: true))))
                    default: return APIError.authentication(.refreshFailed(error))
                    }
                })
            }
            return promise
        }
    }

    /// Whether a refresh failed because the network did, not because the credentials were refused.
    static func isNetworkFailure(_ error: any Error) -> Bool {
        switch error {
        case is URLError: true
        case APIError.transportFailed, APIError.timeout: true
        default: false
        }
    }
}
