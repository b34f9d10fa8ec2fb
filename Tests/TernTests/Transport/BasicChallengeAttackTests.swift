import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Servers that answer `401` with `WWW-Authenticate: Basic`, the one challenge
/// FoundationNetworking's URLSession acts on itself: it asked its delegate for a credential and,
/// Tern offering none, left the task waiting for ever (swift-corelibs-foundation #5456), so every
/// such request over `URLSessionTransport` on Linux ended in its timeout, never with the `401`,
/// and a delegate's refresh never ran. On either transport the `401` is the answer, with its
/// body, at once; a delegate that refreshes signs the request again and gets its data; a user's
/// `.netrc` adds nothing (see `EnvironmentTrustAttackTests`).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct BasicChallengeAttackTests {
    /// A server that refuses every request without `Authorization: Basic dXNlcjpwdw==` with a
    /// Basic challenge, and keeps the request heads.
    final class Guarded: Sendable {
        let requests = Recorder<String>()
        let server: RawServer

        init(challenge: String = "Basic realm=\"shop\"") throws {
            let requests = requests
            server = try RawServer { connection in
                while let request = connection.readRequest() {
                    requests.append(request)
                    if request.contains("Authorization: Basic dXNlcjpwdw==\r\n") {
                        guard connection.send(RawServer.Connection.response("data")) else { return }
                    } else {
                        guard connection.send(RawServer.Connection.response("sign in", status: "401 Unauthorized",
                                                                             headers: "WWW-Authenticate: \(challenge)\r\n")) else { return }
                    }
                }
            }
        }

        deinit { server.stop() }
    }

    /// Signs with Basic credentials once it has refreshed.
    final class SignsAfterRefresh: APIDelegate, Sendable {
        let refreshes = Locked(0)

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            if refreshes.withLock({ $0 }) > 0 { request.setValue("Basic dXNlcjpwdw==", forHTTPHeaderField: "Authorization") }
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            refreshes.withLock { $0 += 1 }
            return Promise(value: (), in: .global())
        }
    }

    static func api(delegate: (any APIDelegate)? = nil) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        api.delegate = delegate
        return api
    }

    static func refusal(_ result: Result<some Any, any Error>) -> String {
        switch result {
        case .failure(APIError.unacceptableStatus(let failure)): "\(failure.statusCode) \(String(decoding: failure.body, as: UTF8.self))"
        case .failure(let error): "\(error)"
        case .success(let value): "success \(value)"
        }
    }

    /// A `GET`, a `POST` with a body, a `DELETE` and a download each get the `401` and its body,
    /// having sent one request without credentials, over one connection one after another.
    @Test(arguments: ["Basic realm=\"shop\"", "Basic", "basic realm=shop, Bearer"])
    func aBasicChallengeIsTheAnswer(challenge: String) async throws {
        let guarded = try Guarded(challenge: challenge)
        let api = Self.api()
        let url = guarded.server.baseURL
        var outcomes = [Self.refusal(await (api.request(route: .get(url + "/account")) as Promise<Response>).result)]
        outcomes.append(Self.refusal(await (api.request(route: .post(url + "/orders"), parameters: JSONParameters(["item": "tea"]))
            as Promise<Response>).result))
        outcomes.append(Self.refusal(await (api.request(route: .delete(url + "/orders/1")) as Promise<Response>).result))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-basic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        outcomes.append(Self.refusal(await api.download(route: .get(url + "/file"), to: directory.appendingPathComponent("file")).result))
        #expect(outcomes == Array(repeating: "401 sign in", count: 4))
        #expect(guarded.requests.items.count == 4)
        #expect(!guarded.requests.items.contains { $0.contains("Authorization") })
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? ["?"]).isEmpty)
    }

    /// A stream's head and an event source get the `401` too: the stream's response fails with
    /// it, and the event source ends with it rather than wait (or reconnect) for ever.
    @Test func aStreamAndAnEventSourceGetTheBasicChallengeAsTheirAnswer() async throws {
        let guarded = try Guarded()
        let api = Self.api()
        let stream = api.stream(route: .get(guarded.server.baseURL + "/tail"))
        #expect(Self.refusal(await stream.response.result) == "401 sign in")
        var events: [String] = []
        var ending = "none"
        do {
            for try await event in api.events(route: .get(guarded.server.baseURL + "/changes")) { events.append(event.data) }
        } catch {
            ending = Self.refusal(Result<Void, any Error>.failure(error))
        }
        #expect(events.isEmpty && ending == "401 sign in", "\(events) \(ending)")
        #expect(!guarded.requests.items.contains { $0.contains("Authorization") })
    }

    /// Two hundred requests at once, each challenged, half of them cancelled as their challenge
    /// may come: every one settles once, with the `401` or as cancelled (FoundationNetworking has
    /// crashed when a cancel raced a task's own end; a declined challenge is one).
    @Test func twoHundredChallengesAtOnceSettleOnceEach() async throws {
        let guarded = try Guarded()
        let api = Self.api()
        let promises: [Promise<Response>] = (0..<200).map { api.request(route: .get(guarded.server.baseURL + "/account/\($0)")) }
        for (index, promise) in promises.enumerated() where index % 2 == 1 { promise.cancel() }
        var outcomes: [String: Int] = [:]
        for promise in promises {
            let outcome = switch await promise.result {
            case .failure(APIError.cancelled): "cancelled"
            case let result: Self.refusal(result)
            }
            outcomes[outcome, default: 0] += 1
        }
        #expect(Set(outcomes.keys).isSubset(of: ["401 sign in", "cancelled"]), "\(outcomes)")
        #expect(outcomes["401 sign in", default: 0] >= 100, "\(outcomes)")
    }

    /// A user and password in the URL go out as Basic credentials on either transport (libcurl
    /// sends them at once; FoundationNetworking once challenged): the server's data comes back.
    @Test func aUserAndPasswordInTheURLAnswerTheChallenge() async throws {
        let guarded = try Guarded()
        let url = guarded.server.baseURL.replacingOccurrences(of: "http://", with: "http://user:pw@") + "/account"
        let result = await (Self.api().request(route: .get(url)) as Promise<Response>).result
        #expect((try? result.get()).map { String(decoding: $0.body, as: UTF8.self) } == "data", "\(result) \(guarded.requests.items)")
    }

    /// The delegate hears the `401`, refreshes once, and the request signed again gets its data.
    @Test func theDelegateRefreshesOnABasicChallengeAndSignsAgain() async throws {
        let guarded = try Guarded()
        let delegate = SignsAfterRefresh()
        let api = Self.api(delegate: delegate)
        let text: String = try await api.request(route: .get(guarded.server.baseURL + "/account")).value
        #expect(text == "data")
        #expect(delegate.refreshes.withLock { $0 } == 1)
        #expect(guarded.requests.items.count == 2)
    }
}
