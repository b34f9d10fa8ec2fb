import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Single-flight credential refresh, against a server that issues and expires tokens.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct AuthenticationTests {
    @Test func twoHundredConcurrentRequestsWithAnExpiredTokenGiveOneRefresh() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        let store = SessionStore(server)
        api.delegate = store
        let promises = (0..<200).map { api.secure($0) }
        var successes = 0
        for promise in promises {
            if case .success(let reply) = await promise.result, reply.ok { successes += 1 }
        }
        #expect(successes == 200)
        #expect(server.refreshCount == 1)
        #expect(store.refreshCalls == 1)
        #expect(store.currentToken == "t1")
        // Nothing went out with the new token and came back refused: each request, at most twice.
        #expect(server.tokens.count <= 400)
        #expect(server.tokens.filter { $0 == "t1" }.count == 200)
    }

    @Test func aDelegateHasOneCoordinatorForEveryAPIItSignsFor() throws {
        let server = try AuthServer()
        let (store, other) = (SessionStore(server), SessionStore(server))
        let (first, second) = (AuthAPI(server), AuthAPI(server))
        first.delegate = store
        second.delegate = store
        #expect(first.signer?.refresher === second.signer?.refresher)
        second.delegate = other
        #expect(first.signer?.refresher !== second.signer?.refresher)
        second.delegate = store
        #expect(first.signer?.refresher === second.signer?.refresher)
        // Delegates made and let go of by the thousand leave a registry of bounded size.
        for _ in 0..<5_000 { AuthAPI(server).delegate = SessionStore(server) }
        #expect(RefreshCoordinator.registeredDelegates < 1_000)
    }

    @Test func requestsStartedDuringARefreshWaitForItAndCarryTheNewToken() async throws {
        let server = try AuthServer()
        server.script(.delayThenIssue(0.3))
        let api = AuthAPI(server)
        let store = SessionStore(server)
        api.delegate = store
        let first = api.secure()
        #expect(await eventually { server.refreshCount == 1 })
        let later = (1...20).map { api.secure($0) }
        _ = try await first.value
        for promise in later { _ = try await promise.value }
        // Only the first request ever carried the old token.
        #expect(server.tokens.filter { $0 == "t0" }.count == 1)
        #expect(server.tokens.filter { $0 == "t1" }.count == 21)
        #expect(server.refreshCount == 1)
    }

    @Test func aFailedRefreshFailsEveryWaitingRequestOnceWithItsError() async throws {
        let server = try AuthServer()
        // Every refresh fails. Requests refused after one refresh failed may start another:
        // whichever they join, each must fail once, with the refresh's own error. (How many
        // refreshes that takes depends on how the answers spread over time: on a slow machine
        // more than the default limit of 5, which has tests of its own.)
        server.script(contentsOf: Array(repeating: .fail(status: 500), count: 200))
        let api = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 200, window: 30)))
        let store = SessionStore(server)
        api.delegate = store
        let settled = Counter()
        let promises = (0..<200).map { api.secure($0).onResult { _ in _ = settled.add(1) } }
        for promise in promises {
            let error = await apiError(of: promise)
            guard case .authentication(.refreshFailed(let cause))? = error else {
                Issue.record("expected refreshFailed, got \(String(describing: error))")
                continue
            }
            #expect((cause as? APIError)?.caseName == "unacceptableStatus")
        }
        #expect(await eventually { settled.value == 200 })
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(settled.value == 200)
        let refreshes = server.refreshCount
        #expect(refreshes >= 1)
        // The next request may try again, and this time it works.
        server.script(.issue)
        #expect(try await api.secure().value.ok)
        #expect(server.refreshCount == refreshes + 1)
    }

    @Test func aRefreshThatFailsOnTheNetworkIsNotCountedByTheGuard() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 1, window: 30)))
        // The token endpoint is unreachable: the port refuses the connection.
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let unreachable = SessionStore(server, tokenURL: closed.baseURL + "/token")
        api.delegate = unreachable
        for _ in 0..<2 {
            let error = await apiError(of: api.secure())
            guard case .authentication(.refreshFailed(let cause))? = error else {
                Issue.record("expected refreshFailed, got \(String(describing: error))")
                continue
            }
            #expect((cause as? APIError)?.caseName == "transportFailed")
        }
        // Two network failures, yet the one refresh the limit allows is still there.
        let store = SessionStore(server)
        api.delegate = store
        #expect(try await api.secure().value.ok)
        #expect(server.refreshCount == 1)
        #expect(unreachable.refreshCalls == 2)
    }

    @Test func aReplayThatIsRefusedAgainEndsWithAnAuthenticationError() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        let store = SessionStore(server)
        api.delegate = store
        defer { withExtendedLifetime(store) {} }
        let promise: Promise<OK> = api.request(route: api.get(endpoint: "/always401"))
        let error = await apiError(of: promise)
        guard case .authentication(.stillUnauthorized(let status))? = error else {
            Issue.record("expected stillUnauthorized, got \(String(describing: error))")
            return
        }
        #expect(status == 401)
        #expect(server.refreshCount == 1)
        #expect(server.hits("/always401") == 2)
    }

    @Test func theExcessiveRefreshGuardTriggersAndItsWindowPasses() async throws {
        let server = try AuthServer()
        let clock = TestClock()
        let api = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 2, window: 30)), clock: clock)
        let store = SessionStore(server)
        api.delegate = store
        defer { withExtendedLifetime(store) {} }
        for _ in 0..<2 {
            #expect(await apiError(of: api.request(route: api.get(endpoint: "/always401")) as Promise<OK>)?.caseName == "authentication")
        }
        let error = await apiError(of: api.request(route: api.get(endpoint: "/always401")) as Promise<OK>)
        guard case .authentication(.tooManyRefreshes(let limit, let window))? = error else {
            Issue.record("expected tooManyRefreshes, got \(String(describing: error))")
            return
        }
        #expect(limit == 2 && window == 30)
        #expect(server.refreshCount == 2)
        clock.advance(by: 30)
        _ = await (api.request(route: api.get(endpoint: "/always401")) as Promise<OK>).result
        #expect(server.refreshCount == 3)
    }

    @Test func cancellingARequestWaitingForARefreshSettlesItAtOnce() async throws {
        let server = try AuthServer()
        let gate = DispatchSemaphore(value: 0)
        server.script(.waitThenIssue(gate))
        let api = AuthAPI(server)
        let store = SessionStore(server)
        api.delegate = store
        defer { withExtendedLifetime(store) {} }
        let first = api.secure()
        #expect(await eventually { server.refreshCount == 1 })
        let waiting = api.secure(1)
        waiting.cancel()
        #expect(await apiError(of: waiting)?.caseName == "cancelled")
        #expect(api.signer?.refresher.inFlight != nil)   // the refresh still runs for the others
        gate.signal()
        #expect(try await first.value.ok)
    }

    @Test func aRefreshThatNeverEndsTimesOutAndFreesTheAPI() async throws {
        final class Stuck: APIDelegate {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) {}
            let held = Recorder<Promise<Void>.Resolver>()
            func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
                let (promise, resolver) = Promise<Void>.pending(in: .global())
                held.append(resolver)   // kept, never settled
                return promise
            }
        }
        let server = try AuthServer()
        let clock = TestClock()
        let api = AuthAPI(server, configuration: APIConfiguration(timeout: 10, retryPolicy: .never), clock: clock)
        let stuck = Stuck()
        api.delegate = stuck
        let first = api.secure()
        // The request's own timeout and the refresh's are both waiting on the test clock.
        #expect(await clock.waitForScheduled(2))
        #expect(api.signer?.refresher.inFlight != nil)
        clock.advance(by: 10)
        #expect(await apiError(of: first) != nil)
        #expect(await eventually { api.signer?.refresher.inFlight == nil })
        // The API is not stuck: a delegate that refreshes gets a new refresh at once.
        let store = SessionStore(server)
        api.delegate = store
        #expect(try await api.secure().value.ok)
        withExtendedLifetime((stuck, store)) {}
    }

    @Test func aTokenKnownToExpireIsRefreshedBeforeSending() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        let store = SessionStore(server)
        store.refreshesProactively = true
        api.delegate = store
        #expect(try await api.secure().value.ok)
        #expect(server.tokens == ["t1"])
        #expect(server.refreshCount == 1)
    }

    @Test func withoutARefreshingDelegateA401IsAnAuthenticationError() async throws {
        final class SignOnly: APIDelegate { func api(_ api: AbstractAPI, willSend request: inout URLRequest) {} }
        let server = try AuthServer()
        let api = AuthAPI(server)
        let delegate = SignOnly()
        api.delegate = delegate
        let error = await apiError(of: api.secure())
        guard case .authentication(.refreshUnavailable)? = error else {
            Issue.record("expected refreshUnavailable, got \(String(describing: error))")
            return
        }
        api.delegate = nil
        #expect(await apiError(of: api.secure())?.caseName == "unacceptableStatus")
    }

    /// `api.delegate = Signer()`, and nothing else holds the signer: the API holds it, so every
    /// request, from anything made from the API (a `Paginator` here), is signed; once the API
    /// and what was made from it go, so does the signer.
    @Test func theAPIHoldsItsDelegateForWhatIsMadeFromIt() async throws {
        final class Signer: APIDelegate {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
                request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
            }
        }
        struct Item: Decodable, Sendable { let id: Int }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/items", answers: .json(#"[{"id":1}]"#)))
        var api: AbstractAPI? = AbstractAPI(configuration: APIConfiguration(name: "shop"), transport: stubs, responseQueue: .global())
        var signer: Signer? = Signer()
        let watched = (api: WeakRef(try #require(api)), signer: WeakRef(try #require(signer)))
        api?.delegate = signer
        signer = nil
        var items: Paginator<Item>? = Paginator(api: try #require(api), request: APIRequest(.get("https://shop.example/items")))
        api = nil
        _ = try await items?.loadNextPage().value
        #expect(stubs.requests.count == 1 && stubs.requests.allSatisfy { $0.headers["Authorization"] == "Bearer t" })
        items = nil
        #expect(await eventually { watched.api.isFreed && watched.signer.isFreed })
    }
}
