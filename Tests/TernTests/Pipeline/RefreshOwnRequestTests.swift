import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A delegate whose refresh asks for its token through the same API and forgets
/// `RequestOptions(authenticates: false)`: what a new user writes first. The refresh's own
/// request goes at once, unsigned, instead of waiting for the refresh it is part of (it used to
/// wait until the API's timeout, and every request failed with a plain timeout).
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct RefreshOwnRequestTests {
    /// Signs every request but `/token`'s, which it records; asks for the token as `style` says.
    final class ForgetfulStore: APIDelegate, @unchecked Sendable {
        enum Style: CaseIterable { case inItsBody, inAnAsyncBody }
        private let lock = NSLock()
        private var token = "t0"
        private(set) var signedTokenRequests = 0
        let style: Style

        init(_ style: Style) { self.style = style }

        var currentToken: String { lock.withLock { token } }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            if request.url?.path == "/token" { lock.withLock { signedTokenRequests += 1 } }
            request.setValue("Bearer \(currentToken)", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let store: @Sendable (TokenReply) -> Void = { [self] reply in lock.withLock { token = reply.token } }
            switch style {
            case .inItsBody:
                let reply: Promise<TokenReply> = api.request(route: .post("/token"))
                return reply.map(in: .global(), store)
            case .inAnAsyncBody:
                return Promise(in: .global()) {
                    let reply: TokenReply = try await api.request(route: .post("/token")).value
                    store(reply)
                }
            }
        }
    }

    @Test(arguments: ForgetfulStore.Style.allCases)
    func aRefreshThatAsksThroughItsOwnAPIIsNotHeldForItself(style: ForgetfulStore.Style) async throws {
        let server = try AuthServer()
        let api = AuthAPI(server, configuration: APIConfiguration(timeout: 20, retryPolicy: .never))
        let store = ForgetfulStore(style)
        api.delegate = store
        let promises = (0..<20).map { api.secure($0) }
        for promise in promises {
            let result = await promise.result
            #expect((try? result.get())?.ok == true, "\(result)")
        }
        #expect(server.refreshCount == 1)
        #expect(store.currentToken == "t1")
        #expect(store.signedTokenRequests == 0)
        // Once the refresh is over, a request of the API is signed and held as before.
        let later = await api.secure(99).result
        #expect((try? later.get())?.ok == true)
        #expect(server.tokens.last == "t1")
    }

    /// Signs with a fixed token and never refreshes.
    final class FixedSigner: APIDelegate {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer other", forHTTPHeaderField: "Authorization")
        }
    }

    /// Asks another API, signed by another delegate, then for its token without naming
    /// `authenticates: false`.
    final class Asker: APIDelegate, @unchecked Sendable {
        let other: AuthAPI
        private let lock = NSLock()
        private var token = "t0"
        init(other: AuthAPI) { self.other = other }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(lock.withLock { token })", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let asked: Promise<OK> = other.secure(7)
            let reply: Promise<TokenReply> = api.request(route: .post("/token"))
            return asked.recover(in: .global()) { _ in OK(ok: false) }
                .then(in: .global()) { _ in reply }
                .map(in: .global()) { [self] reply in lock.withLock { token = reply.token } }
        }
    }

    @Test func aRequestOfAnotherDelegatesAPIMadeDuringTheRefreshIsStillSigned() async throws {
        let server = try AuthServer()
        let (api, other) = (AuthAPI(server), AuthAPI(server))
        other.delegate = FixedSigner()
        api.delegate = Asker(other: other)
        let result = await api.secure(1).result
        #expect((try? result.get())?.ok == true, "\(result)")
        // The other API's request was signed by its own delegate (and refused by the server).
        #expect(server.tokens.contains("other"), "\(server.tokens)")
        #expect(server.refreshCount == 1)
    }

    /// Asks for its token from a callback, where the refresh is no longer known, without
    /// `authenticates: false`; keeps how that request ended.
    final class CallbackAsker: APIDelegate {
        let tokenResults = Recorder<Result<TokenReply, any Error>>()

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer t0", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let first: Promise<Void> = Promise(in: .global()) {}
            let tokenResults = tokenResults
            return first.then(in: .global()) { _ -> Promise<TokenReply> in
                let reply: Promise<TokenReply> = api.request(route: .post("/token"))
                reply.onResult(in: .global()) { tokenResults.append($0) }
                return reply
            }.map(in: .global()) { _ in }
        }
    }

    /// Such a refresh's request still waits for the refresh, until the API's timeout: then the
    /// error says what the request was waiting for, and what to do.
    @Test func aRequestHeldForTheRefreshSaysSoWhenItTimesOut() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server, configuration: APIConfiguration(timeout: 2, retryPolicy: .never))
        let asker = CallbackAsker()
        api.delegate = asker
        let result = await api.secure(0).result
        #expect(await eventually(timeout: 10) { asker.tokenResults.items.count == 1 })
        let token = try #require(asker.tokenResults.items.first)
        // Whichever ran out of time first (the refresh, bounded by the API's timeout, or the
        // request), each error says what it waited for, and what to do.
        for (name, result) in [("the token request", token.map { _ in () }), ("the request", result.map { _ in () })] {
            let timeout: APIError.Timeout
            switch result {
            case .failure(APIError.timeout(let over)), .failure(APIError.authentication(.refreshFailed(APIError.timeout(let over)))):
                timeout = over
            default:
                Issue.record("\(name): expected a timeout, got \(result)")
                continue
            }
            #expect(timeout.description.contains("refreshCredentials(for:)"), "\(name): \(timeout)")
            #expect(timeout.description.contains("RequestOptions(authenticates: false)"), "\(name): \(timeout)")
            #expect(!timeout.waitedForConnection)
        }
        #expect(server.refreshCount == 0)
    }
}
