import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A task that a delegate's refresh starts and that goes on after the refresh has ended: work
/// handed off for later (the requests queued while offline, sent once there is a token; the
/// next proactive refresh, scheduled).
///
/// Promised (`APIDelegate`): `api(_:willSend:)` runs before every attempt, and only the
/// refresh's own requests go unsigned, so that they are not held for the refresh they are part
/// of. Tern tells a request of the refresh from others by a task-local value bound while
/// `refreshCredentials(for:)` runs (`RefreshScope`), which every task started there inherits
/// for good; `RefreshScope.isRefreshing(for:)` asks only whose refresh it was, never whether it
/// is still running. So a request that such a task makes minutes after the refresh ended, with
/// a fresh token at hand, went out unsigned, and its 401 was not refreshed for: it failed with
/// `unacceptableStatus(401)`.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RefreshScopeLingerAttackTests {
    /// Signs with its token; its refresh gets a new one, then starts a task that sends one
    /// request of the API once `release` is called: after the refresh has ended.
    final class HandingOffStore: APIDelegate, @unchecked Sendable {
        private let token = Locked("t0")
        private let tokenURL: String
        private let released = Locked<CheckedContinuation<Void, Never>?>(nil)
        private let isReleased = Locked(false)
        let later = Locked<Promise<OK>?>(nil)
        let started = DispatchSemaphore(value: 0)

        init(tokenURL: String) { self.tokenURL = tokenURL }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token.withLock { $0 })", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            Promise(in: .global()) { [self] in
                let reply: TokenReply = try await api.request(route: .post(tokenURL), options: RequestOptions(authenticates: false)).value
                token.withLock { $0 = reply.token }
                Task.onTestThreads { [self] in
                    await withCheckedContinuation { continuation in
                        let now = isReleased.withLock { $0 }
                        if now { continuation.resume() } else { released.withLock { $0 = continuation } }
                    }
                    later.withLock { $0 = (api as? AuthAPI)?.secure(99) }
                    started.signal()
                }
            }
        }

        func release() {
            isReleased.withLock { $0 = true }
            released.withLock { continuation in
                continuation?.resume()
                continuation = nil
            }
        }
    }

    @Test func aRequestMadeAfterTheRefreshEndedBySomethingItStartedIsSigned() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server, configuration: APIConfiguration(timeout: 20, retryPolicy: .never))
        let store = HandingOffStore(tokenURL: server.baseURL + "/token")
        api.delegate = store
        // Refused with t0, refreshed once, replayed with t1.
        let first = await api.secure(1).result
        #expect((try? first.get())?.ok == true, "\(first)")
        #expect(server.refreshCount == 1)
        #expect(api.signer?.refresher.inFlight == nil)
        // The refresh is over; what it handed off runs now.
        store.release()
        store.started.wait()
        let later = try #require(store.later.withLock { $0 })
        let result = await later.result
        #expect((try? result.get())?.ok == true, "a request made after the refresh ended: \(result)")
        #expect(server.tokens.last == "t1", "it carried \(server.tokens.last.map { $0.isEmpty ? "no token" : $0 } ?? "nothing")")
    }
}
