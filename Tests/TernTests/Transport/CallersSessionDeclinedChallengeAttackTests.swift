import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server that answers `401` with a challenge, to an API over a session of the caller's whose
/// delegate declines every challenge it does not know (the usual defensive delegate): the
/// session cancels the task, and its completion handler says `URLError.cancelled`, which Tern
/// took for its own cancel. The request failed as `.cancelled`, a thing apps ignore as the
/// user's doing; its refresh never ran, and an event source stopped for good. A cancel Tern did
/// not ask for is now the session's refusal of the challenge: the `401` is the answer when the
/// session kept it, else a typed `URLError.userCancelledAuthentication`.
///
/// URLSession by nature, whatever transport the run tests.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CallersSessionDeclinedChallengeAttackTests {
    /// Declines every challenge.
    final class Declining: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    @Test func aDeclinedChallengeIsNotTheCallersCancel() async throws {
        let origin = try HTTPCacheTests.Origin { _, _ in
            HTTPCacheTests.answer("sign in again", status: "401 Unauthorized", "WWW-Authenticate: Basic realm=\"api\"\r\n")
        }
        let session = URLSession(configuration: .ephemeral, delegate: Declining(), delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                              transport: URLSessionTransport(session: session), responseQueue: .global())
        let result = await (api.request(route: .get(origin.url + "/me")) as Promise<Response>).result
        guard case .failure(let failure) = result, let error = failure as? APIError else {
            Issue.record("a refused request succeeded: \(result)")
            return
        }
        switch error {
        case .unacceptableStatus(let refusal):
            #expect(refusal.statusCode == 401)
        case .transportFailed(let underlying):
            #expect((underlying.underlying as? URLError)?.code == .userCancelledAuthentication, "\(error)")
        default:
            Issue.record("the session's refusal of the challenge read as \(error)")
        }
    }
}
