import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// A stream whose first attempt does not open it (the connection is lost before the head, or
/// the server refuses the credentials and they are refreshed), and whose next attempt's
/// transport reports a head twice, or one more after the end: read as lines and as events, with
/// and without a plugin and a delegate. The second head before the end is the transport's error
/// (the stream fails with `badServerResponse`); one after the end changes nothing. Either way
/// the stream ends, its response settles once, and the API and the transport are let go.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct ReplayedStreamDisorderTests: EarlyAnswerAttack {
    /// What the first attempt does.
    enum FirstAttempt: String, Sendable, CaseIterable {
        /// The connection is lost before the head: the policy retries.
        case lost
        /// A 401: the delegate refreshes, and the request is replayed.
        case refused
    }

    /// Where the second head comes in the replay's answer.
    enum SecondHead: String, Sendable, CaseIterable {
        case beforeTheBody, afterTheEnd
    }

    /// How the stream is read.
    enum View: String, Sendable, CaseIterable {
        case lines, events
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let first: FirstAttempt
        let second: SecondHead
        let view: View
        let withPlugin: Bool
        let withDelegate: Bool
        let place: Place

        var testDescription: String {
            "\(first) \(second) \(view)\(withPlugin ? " plugin" : "")\(withDelegate ? " delegate" : "") \(place)"
        }
    }

    /// Every case: a refusal is refreshed only by a delegate.
    static let cases: [Case] = FirstAttempt.allCases.flatMap { first in
        SecondHead.allCases.flatMap { second in
            View.allCases.flatMap { view in
                [false, true].flatMap { withPlugin in
                    [false, true].filter { $0 || first == .lost }.flatMap { withDelegate in
                        Place.allCases.map { Case(first: first, second: second, view: view, withPlugin: withPlugin, withDelegate: withDelegate, place: $0) }
                    }
                }
            }
        }
    }

    static func answers(_ testCase: Case) -> [[Step]] {
        let first: [Step] = switch testCase.first {
        case .lost: [.end(.networkConnectionLost)]
        case .refused: [.head(401), .chunk("no\n"), .end()]
        }
        let head = Step.head(200, ["Content-Type": testCase.view == .events ? "text/event-stream" : "text/plain"])
        let body: [Step] = testCase.view == .events ? [.chunk("data: a\n\n"), .chunk("data: b\n\n")] : [.chunk("a\n"), .chunk("b\n")]
        let replay: [Step] = switch testCase.second {
        case .beforeTheBody: [head, head] + body + [.end()]
        case .afterTheEnd: [head] + body + [.end(), head]
        }
        return [first, replay]
    }

    @Test(arguments: cases) func aReplayedStreamWhoseHeadComesTwice(_ testCase: Case) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false),
                                             plugins: testCase.withPlugin ? [Watching()] : [])
        let delegate = testCase.withDelegate ? Signing() : nil
        try await Self.attack(Hostile(testCase.place, unruly: true, answers: Self.answers(testCase)), configuration, delegate: delegate) { api, transport in
            let stream = api.stream(route: .get(Self.url))
            let read = try await Self.within { () async -> Result<[String], APIError> in
                do {
                    var items: [String] = []
                    switch testCase.view {
                    case .lines: for try await line in stream.lines { items.append(line) }
                    case .events: for try await event in stream.events { items.append(event.data) }
                    }
                    return .success(items)
                } catch let error as APIError {
                    return .failure(error)
                } catch {
                    Issue.record("untyped: \(error)")
                    return .failure(.cancelled)
                }
            }
            switch (testCase.second, read) {
            case (.afterTheEnd, .success(["a", "b"])?): break
            case (.beforeTheBody, .failure(.transportFailed(let failure))?):
                #expect((failure.underlying as? URLError)?.code == .badServerResponse, "\(failure)")
            default: Issue.record("\(testCase.second): \(String(describing: read))")
            }
            // The response settled once, with the replay's head.
            #expect(await Self.value(of: stream.response)?.statusCode == 200)
            #expect(transport.requests.items.count == 2)
            if testCase.withDelegate {
                let signed = transport.requests.items.map { $0.value(forHTTPHeaderField: "Authorization") }
                #expect(signed == (testCase.first == .refused ? ["Bearer t1", "Bearer t2"] : ["Bearer t1", "Bearer t1"]))
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }
}
