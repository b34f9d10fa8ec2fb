import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What sharing one refresh coordinator among APIs broke.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct SharedDelegateRefreshBreakTests {
    /// Two APIs share a delegate; one allows 2 refreshes in 300 s, the other 10 in 1 ms. After
    /// the first API's two refreshes its next request is refused by its limit; then one refresh
    /// for the second API's request, and the first API's limit should still count 3 refreshes in
    /// its 300 s. It counts 1: RefreshState.decide purges the shared history with the window of
    /// whichever API asks, and the second API's 1 ms window dropped the first's two refreshes.
    @Test func aShortWindowOfOneAPIErasesTheRefreshesAnotherAPIsLimitCounts() async throws {
        let server = try AuthServer()
        let store = SessionStore(server)
        let strict = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 2, window: 300)))
        let lax = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 10, window: 0.001)))
        strict.delegate = store
        lax.delegate = store
        func refused(_ api: AuthAPI) async -> APIError.AuthenticationFailure? {
            guard case .authentication(let failure)? = await apiError(of: api.request(route: api.get(endpoint: "/always401")) as Promise<OK>) else { return nil }
            return failure
        }
        for _ in 0..<2 {
            guard case .stillUnauthorized(401)? = await refused(strict) else { Issue.record("expected stillUnauthorized"); return }
        }
        guard case .tooManyRefreshes(2, 300)? = await refused(strict) else { Issue.record("expected the strict limit"); return }
        try await Task.sleep(for: .milliseconds(10))
        guard case .stillUnauthorized(401)? = await refused(lax) else { Issue.record("expected stillUnauthorized"); return }
        #expect(server.refreshCount == 3)
        // Three refreshes of this delegate within 300 s: the strict API allows two.
        let failure = await refused(strict)
        guard case .tooManyRefreshes(2, 300)? = failure else {
            Issue.record("expected tooManyRefreshes(2, 300), got \(String(describing: failure)); refreshes: \(server.refreshCount)")
            return
        }
        #expect(server.refreshCount == 3)
    }
}
