import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A refresh that cancels, from inside `refreshCredentials(for:)` and before returning, every
/// request waiting for it (an app whose sign-in sheet was dismissed), then fails or succeeds:
/// "every promise settles exactly once with a typed APIError", the cancelled ones as
/// cancelled, and the API is not left holding a refresh (Authentication.md: "the next request
/// may try again").
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ReentrantRefreshCancelAttackTests {
    /// Signs with "Bearer t<n>"; its refresh first cancels the `waiting` promises the test
    /// gives it, then counts up, and settles with `outcome`.
    final class Cancelling: APIDelegate {
        let number = Locked(1)
        let toCancel = Recorder<Promise<String>>()
        let calls = Locked(0)
        let fails: Bool
        let waiting: Int
        init(fails: Bool, waiting: Int) { (self.fails, self.waiting) = (fails, waiting) }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer t\(number.withLock { $0 })", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let call = calls.withLock { $0 += 1; return $0 }
            if call == 1 {
                // The test hands over its promises after making them; a slow run (the thread
                // sanitizer) can reach here first.
                let deadline = Date(timeIntervalSinceNow: 10)
                while toCancel.items.count < waiting, Date() < deadline { usleep(1_000) }
                toCancel.items.forEach { $0.cancel() }
            }
            number.withLock { $0 += 1 }
            return fails && call == 1 ? Promise(error: URLError(.userCancelledAuthentication), in: .global()) : Promise(value: (), in: .global())
        }
    }

    @Test(arguments: [false, true]) func aRefreshThatCancelsItsWaitersSettlesEachOnceAndFreesTheAPI(fails: Bool) async throws {
        let server = try KeepingServer { request, _ in
            let token = ResumeLie.header("Authorization", in: request) ?? ""
            return token == "Bearer t1" ? "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n" : RawServer.Connection.response("\"ok\"")
        }
        let count = 5
        let delegate = Cancelling(fails: fails, waiting: count)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        api.delegate = delegate
        let promises: [Promise<String>] = (0..<count).map { api.request(route: .get(server.baseURL + "/secure/\($0)")) }
        promises.forEach { delegate.toCancel.append($0) }
        for (index, promise) in promises.enumerated() {
            let result = await promise.result
            guard case .failure(let error) = result, (error as? APIError)?.isCancellation == true else {
                Issue.record("request \(index): \(result), not cancelled")
                continue
            }
        }
        #expect(await eventually { api.signer?.refresher.inFlight == nil }, "the API still holds the refresh")
        // Not stuck: the next request is signed (with t2) and answered.
        let next: String? = try? await api.request(route: .get(server.baseURL + "/secure/after")).value
        #expect(next == "ok", "the next request got \(String(describing: next)); the refresh was called \(delegate.calls.withLock { $0 }) times")
        withExtendedLifetime(delegate) {}
    }
}
