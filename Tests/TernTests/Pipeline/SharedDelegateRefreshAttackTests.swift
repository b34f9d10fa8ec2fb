import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One delegate given to several APIs: one refresh for all of them, whatever kind of request
/// each sends, whatever happens to the APIs and the delegate while it runs.
@Suite(.onTestThreads, .timeLimit(.minutes(3))) struct SharedDelegateRefreshAttackTests {
    /// Every API's requests at once, the token expired: one refresh; each request goes out once
    /// with the new token, and succeeds. One of the APIs has a cache (one delegate for a cached
    /// API and a plain one: before d6ed8f4 each refreshed on its own, spending a single-use
    /// refresh token twice). Held, the refresh waits while more requests of every API are made:
    /// they wait for it, rather than go out, be refused and start one of their own.
    @Test(arguments: [(2, 200), (3, 200), (10, 50)], [false, true])
    func manyAPIsWithManyRequestsEachRefreshOnce(load: (apis: Int, each: Int), held: Bool) async throws {
        let (server, store, clients, gate) = try Self.sharedStore(apis: load.apis, cached: 0, held: held)
        func send(_ ids: Range<Int>) -> [Promise<OK>] {
            ids.flatMap { i in clients.enumerated().map { $0.element.secure($0.offset * 10_000 + i) } }
        }
        var promises = send(0..<load.each)
        if held {
            #expect(await eventually { server.refreshCount == 1 })
            promises += send(load.each..<load.each + 20)
            // Time for those to be refused and start a refresh of their own, were they sent.
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.refreshCount == 1)
            gate.signal()
        }
        var successes = 0
        for promise in promises {
            if case .success(let reply) = await promise.result, reply.ok { successes += 1 }
        }
        #expect(successes == promises.count)
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(store.currentToken == "t1")
        let tokens = server.tokens
        #expect(tokens.filter { $0 == "t1" }.count == promises.count)
        #expect(tokens.allSatisfy { $0 == "t0" || $0 == "t1" })
    }

    /// A plain API, one with a cache, a stream and a download, one delegate: requests of every
    /// kind wait for the one refresh the plain API started, and go out once with the new token.
    @Test func requestsOfEveryKindWaitForOneRefresh() async throws {
        let (server, store, apis, gate, first) = try await Self.heldRefresh(apis: 4, cached: 1)
        let (plain, cached, streaming, downloading) = (apis[0], apis[1], apis[2], apis[3])
        let plains = (1..<20).map { plain.secure($0) }
        let cachedOnes = (100..<120).map { cached.secure($0) }
        let stream = streaming.stream(route: streaming.get(endpoint: "/secure/stream"))
        let streamed = Task.onTestThreads { () -> [String] in
            var lines: [String] = []
            for try await line in stream.lines { lines.append(line) }
            return lines
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attack53-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let download = downloading.download(route: downloading.get(endpoint: "/secure/download"), to: directory.appendingPathComponent("file.json"))
        // Time for any of them to be sent and refused, and start a refresh of its own, were it sent.
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.refreshCount == 1)
        #expect(server.tokens == ["t0"])
        gate.signal()
        var successes = 0
        for promise in [first] + plains + cachedOnes {
            if case .success(let reply) = await promise.result, reply.ok { successes += 1 }
        }
        #expect(successes == 40)
        #expect(try await streamed.value == [#"{"ok": true}"#])
        let file = try await download.value
        #expect(try String(contentsOf: file.fileURL, encoding: .utf8) == #"{"ok": true}"#)
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(server.tokens.filter { $0 == "t1" }.count == 42)
        #expect(server.tokens.filter { $0 == "t0" }.count == 1)
    }

    /// A paging API and an event source share the delegate with a plain API; the token expires
    /// between two pages: the next page, the event source and the plain API's requests wait for
    /// one refresh, and each goes out once with the new token.
    @Test func pagesAndEventsShareARefreshThatComesBetweenTwoPages() async throws {
        let (server, store, apis, _) = try Self.sharedStore(apis: 3)
        let items = try TokenCheckedServer(server)
        let (plain, pager, listener) = (apis[0], apis[1], apis[2])
        #expect(try await plain.secure(0).value.ok)   // t1
        var pages: [[Int]] = []
        var others: [Promise<OK>] = []
        var event: Task<String?, any Error>?
        for try await page in pager.pages(APIRequest<[Int]>(.get(items.server.baseURL + "/items"))) {
            pages.append(page.elements)
            guard pages.count == 1 else { continue }
            // The token expires: the server issues another, which nobody holds.
            let rotated = try await (plain.request(route: .post(server.baseURL + "/token"),
                                                   options: RequestOptions(retryPolicy: .never, authenticates: false)) as Promise<TokenReply>).value
            #expect(rotated.token == "t2")
            others = (1...20).map { plain.secure($0) }
            event = Task.onTestThreads {
                for try await event in listener.events(route: .get(items.server.baseURL + "/events")) { return event.data }
                return nil
            }
        }
        #expect(pages == [[1], [2], [3]])
        #expect(try await event?.value == "hello")
        for promise in others { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 3 && store.refreshCalls == 2)
        #expect(store.currentToken == "t3")
        #expect(server.tokens.filter { $0 == "t3" }.count == 20)
        // Pages 2, 3 and the empty 4, and the event source: each once with the new token.
        #expect(items.paths(signedWith: "t3") == ["/events", "/items?page=2", "/items?page=3", "/items?page=4"])
        // Before: the first page, and what went out with the old token and was refused.
        #expect(Set(items.paths(signedWith: "t1")).isSubset(of: ["/items?page=1", "/items?page=2", "/events"]))
        #expect(items.paths(signedWith: "t1").filter { $0 == "/items?page=1" }.count == 1)
    }

    /// The refresh runs once, handed the API whose request was refused first, whichever that is.
    @Test func theRefreshIsHandedTheAPIWhoseRequestWasRefusedFirst() async throws {
        let server = try AuthServer()
        let store = GatedStore(SessionStore(server))
        let apis = (0..<3).map { _ in AuthAPI(server) }
        apis.forEach { $0.delegate = store }
        let started = apis[2].secure(0)
        #expect(await eventually { store.calls.value == 1 })
        let waiting = (1...30).map { apis[$0 % 3].secure($0) }
        try await Task.sleep(for: .milliseconds(300))
        store.gate.signal()
        for promise in [started] + waiting { #expect(try await promise.value.ok) }
        #expect(store.handed == [ObjectIdentifier(apis[2])])
        #expect(server.refreshCount == 1 && store.inner.refreshCalls == 1)
        #expect(server.tokens.filter { $0 == "t1" }.count == 31)
    }

    /// Requests of the second API wait for the first's refresh; its delegate is swapped meanwhile.
    /// They resume with the new delegate: it signs them, and its own refresh runs for them.
    @Test func aDelegateSwappedWhileTheSharedRefreshRunsSignsWhatWaited() async throws {
        let (server, store, apis, gate, started) = try await Self.heldRefresh()
        let (first, second) = (apis[0], apis[1])
        // The new delegate's refresh waits until the old one's replay is in: the server takes
        // only the newest token.
        let other = GatedStore(SessionStore(server))
        let waiting = (1...20).map { second.secure($0) }
        second.delegate = other
        gate.signal()
        #expect(try await started.value.ok)
        other.gate.signal()
        var successes = 0
        for promise in waiting {
            if case .success(let reply) = await promise.result, reply.ok { successes += 1 }
        }
        #expect(successes == 20)
        // The old delegate's refresh (t1), then the new one's (t2), once each.
        #expect(store.refreshCalls == 1 && other.calls.value == 1 && other.inner.refreshCalls == 1)
        #expect(server.refreshCount == 2)
        #expect(server.tokens.filter { $0 == "t2" }.count == 20)
        #expect(server.tokens.filter { $0 == "t1" }.count == 1)
        // The same delegate again: its coordinator knows its credentials are stale (t1 < t2).
        second.delegate = store
        #expect(try await second.secure(99).value.ok)
        #expect(store.refreshCalls == 2 && server.refreshCount == 3)
        #expect(try await first.secure(98).value.ok)
        #expect(store.refreshCalls == 2 && server.refreshCount == 3)
    }

    /// The waiting API's delegate set to nil: its requests go out unsigned after the refresh and
    /// fail with the server's 401, each once; the other API's go on.
    @Test func aDelegateSetToNilWhileItsRequestsWaitSendsThemUnsigned() async throws {
        let (server, store, apis, gate, started) = try await Self.heldRefresh()
        let (first, second) = (apis[0], apis[1])
        let waiting = (1...10).map { second.secure($0) }
        let firsts = (11...20).map { first.secure($0) }
        second.delegate = nil
        gate.signal()
        #expect(try await started.value.ok)
        for promise in waiting {
            guard case .unacceptableStatus(let failure)? = await apiError(of: promise) else {
                Issue.record("expected the server's 401")
                continue
            }
            #expect(failure.statusCode == 401)
        }
        for promise in firsts { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(server.tokens.filter { $0 == "" }.count == 10)
        #expect(server.tokens.filter { $0 == "t1" }.count == 11)
    }

    /// The same delegate set again while its refresh runs: the API finds the same coordinator,
    /// and its new requests wait for the refresh that runs.
    @Test func theSameDelegateSetAgainWhileItRefreshesJoinsTheRunningRefresh() async throws {
        let (server, store, apis, gate, started) = try await Self.heldRefresh()
        let (first, second) = (apis[0], apis[1])
        let before = (1...10).map { second.secure($0) }
        second.delegate = store
        first.delegate = store
        let after = (11...20).map { second.secure($0) } + (21...30).map { first.secure($0) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.tokens == ["t0"])
        gate.signal()
        for promise in [started] + before + after { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(server.tokens.filter { $0 == "t1" }.count == 31)
    }

    /// Two delegates given in turn to one API while requests run on it and on an API that keeps
    /// the first: every request settles once, succeeding or failing with an authentication error.
    @Test func twoDelegatesInTurnWhileRequestsRun() async throws {
        let server = try AuthServer()
        let (store, other) = (SessionStore(server), SessionStore(server))
        let unlimited = APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 100_000, window: 30))
        let (first, second) = (AuthAPI(server, configuration: unlimited), AuthAPI(server, configuration: unlimited))
        first.delegate = store
        second.delegate = store
        let settled = Counter()
        var promises: [Promise<OK>] = []
        for i in 0..<200 {
            second.delegate = i.isMultiple(of: 2) ? other : store
            promises.append(first.secure(i).onResult { _ in _ = settled.add(1) })
            promises.append(second.secure(1000 + i).onResult { _ in _ = settled.add(1) })
        }
        for promise in promises {
            switch await promise.result {
            case .success(let reply): #expect(reply.ok)
            case .failure(let error):
                guard case .authentication? = error as? APIError else {
                    Issue.record("expected an authentication error, got \(error)")
                    continue
                }
            }
        }
        #expect(await eventually { settled.value == 400 })
        try await Task.sleep(for: .milliseconds(20))
        #expect(settled.value == 400)
        #expect(server.refreshCount == store.refreshCalls + other.refreshCalls)
        // Settled down: each delegate signs and refreshes as before.
        second.delegate = other
        #expect(try await second.secure(5000).value.ok)
        #expect(try await first.secure(5001).value.ok)
    }

    /// A token known to be expired, refreshed before sending, on ten APIs at once: one refresh.
    @Test func aProactiveRefreshAcrossTenAPIsRunsOnce() async throws {
        let (server, store, apis, _) = try Self.sharedStore(apis: 10)
        store.refreshesProactively = true
        let promises = (0..<50).flatMap { i in apis.enumerated().map { $0.element.secure($0.offset * 1000 + i) } }
        for promise in promises { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(server.tokens.count == 500 && server.tokens.allSatisfy { $0 == "t1" })
    }

    /// The API whose request started the refresh is let go of while the refresh runs: the other
    /// API's requests settle; the starter's own request still ends, typed; nothing keeps it after.
    @Test func theAPIThatStartedTheRefreshLetGoOfWhileItRuns() async throws {
        let server = try AuthServer()
        let gate = DispatchSemaphore(value: 0)
        server.script(.waitThenIssue(gate))
        let store = SessionStore(server)
        var starter: AuthAPI? = AuthAPI(server)
        let second = AuthAPI(server)
        starter?.delegate = store
        second.delegate = store
        let watched = WeakRef(try #require(starter))
        let own = try #require(starter).secure(0)
        #expect(await eventually { server.refreshCount == 1 })
        let waiting = (1...20).map { second.secure($0) }
        starter = nil
        gate.signal()
        for promise in waiting { #expect(try await promise.value.ok) }
        switch await own.result {
        case .success(let reply): #expect(reply.ok)
        case .failure(let error): #expect(error is APIError, "untyped: \(error)")
        }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(await eventually { watched.isFreed })
        // The delegate's coordinator lives on with the API that still holds it.
        #expect(try await second.secure(21).value.ok)
        #expect(server.refreshCount == 1)
    }

    /// The refresh fails (a 401, a 500, a hang-up): every request waiting on any of the three APIs
    /// fails once with refreshFailed and the token endpoint's error; the next request tries again.
    @Test(arguments: [("401", "unacceptableStatus"), ("500", "unacceptableStatus"), ("hangUp", "transportFailed")])
    func aFailedSharedRefreshFailsEveryWaiterOnEveryAPIOnce(failure: String, cause: String) async throws {
        let server = try AuthServer()
        switch failure {
        case "401": server.script(.fail(status: 401))
        case "500": server.script(.fail(status: 500))
        // A hang-up on a reused connection is sent again once, on a new one, by the transport.
        default: server.script(.hangUp, .hangUp)
        }
        let store = GatedStore(SessionStore(server))
        let apis = (0..<3).map { _ in AuthAPI(server) }
        apis.forEach { $0.delegate = store }
        let settled = Counter()
        let started = apis[0].secure(0).onResult { _ in _ = settled.add(1) }
        #expect(await eventually { store.calls.value == 1 })
        let waiting = (1...30).map { i in apis[i % 3].secure(i).onResult { _ in _ = settled.add(1) } }
        // Time for each to begin and find the refresh running: one that began after it failed
        // would start another.
        try await Task.sleep(for: .milliseconds(500))
        store.gate.signal()
        for promise in [started] + waiting {
            let error = await apiError(of: promise)
            guard case .authentication(.refreshFailed(let underlying))? = error else {
                Issue.record("expected refreshFailed, got \(String(describing: error))")
                continue
            }
            #expect((underlying as? APIError)?.caseName == cause)
        }
        #expect(await eventually { settled.value == 31 })
        try await Task.sleep(for: .milliseconds(20))
        #expect(settled.value == 31)
        let tokenCalls = server.refreshCount
        #expect(store.calls.value == 1 && store.inner.refreshCalls == 1)
        #expect(tokenCalls == 1 || (failure == "hangUp" && tokenCalls == 2))
        #expect(server.tokens == ["t0"])
        // The next request, on another API, refreshes again and succeeds.
        server.script()
        store.gate.signal()
        #expect(try await apis[2].secure(99).value.ok)
        #expect(store.calls.value == 2 && server.refreshCount == tokenCalls + 1)
        #expect(try await apis[1].secure(98).value.ok)
        #expect(server.refreshCount == tokenCalls + 1)
    }

    /// A refresh that hangs, started by an API with a short timeout: it times out at that API's
    /// timeout, and the requests of an API with a long one that waited for it fail refreshFailed.
    @Test func aSharedRefreshThatHangsTimesOutForEveryWaiter() async throws {
        let server = try AuthServer()
        let store = GatedStore(SessionStore(server))
        defer { store.gate.signal() }
        let clock = TestClock()
        let short = AuthAPI(server, configuration: APIConfiguration(timeout: 5, retryPolicy: .never), clock: clock)
        let long = AuthAPI(server, configuration: APIConfiguration(timeout: 60, retryPolicy: .never), clock: clock)
        short.delegate = store
        long.delegate = store
        let started = short.secure(0)
        #expect(await eventually { store.calls.value == 1 })
        // The starter's own timeout and the refresh's, both at 5 s on the test clock.
        #expect(await clock.waitForScheduled(2))
        #expect(clock.pendingCount == 2)
        let waiting = (1...10).map { long.secure($0) }
        // Their own timeouts; then time for the last of them to join the refresh.
        #expect(await clock.waitForScheduled(12))
        try await Task.sleep(for: .milliseconds(500))
        clock.advance(by: 5)
        switch await apiError(of: started) {
        case .timeout?, .authentication(.refreshFailed)?: break
        case let other: Issue.record("expected a timeout, got \(String(describing: other))")
        }
        for promise in waiting {
            let error = await apiError(of: promise)
            guard case .authentication(.refreshFailed(let underlying))? = error else {
                Issue.record("expected refreshFailed, got \(String(describing: error))")
                continue
            }
            #expect((underlying as? APIError)?.caseName == "timeout")
        }
        #expect(store.calls.value == 1)
        #expect(server.tokens == ["t0"])
    }

    /// A server that refuses every token, two APIs with their own limits: the refreshes are the
    /// delegate's, counted once for both, and stop, typed.
    @Test func refreshLimitsOfAPIsThatShareADelegateCountTheSameRefreshes() async throws {
        let server = try AuthServer()
        let store = SessionStore(server)
        let a = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 2, window: 300)))
        let b = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, refreshLimit: RefreshLimit(count: 3, window: 300)))
        a.delegate = store
        b.delegate = store
        func refused(_ api: AuthAPI) async -> APIError.AuthenticationFailure? {
            guard case .authentication(let failure)? = await apiError(of: api.request(route: api.get(endpoint: "/always401")) as Promise<OK>) else { return nil }
            return failure
        }
        func stillUnauthorized(_ failure: APIError.AuthenticationFailure?) -> Bool {
            if case .stillUnauthorized(401)? = failure { true } else { false }
        }
        #expect(stillUnauthorized(await refused(a)))   // refresh 1
        #expect(stillUnauthorized(await refused(b)))   // refresh 2
        guard case .tooManyRefreshes(let limit, let window)? = await refused(a) else {
            Issue.record("expected tooManyRefreshes")
            return
        }
        #expect(limit == 2 && window == 300)
        #expect(stillUnauthorized(await refused(b)))   // refresh 3
        guard case .tooManyRefreshes(let limitB, _)? = await refused(b) else {
            Issue.record("expected tooManyRefreshes")
            return
        }
        #expect(limitB == 3)
        #expect(server.refreshCount == 3 && store.refreshCalls == 3)
    }

    /// Many requests at once on three APIs that share a delegate, against a server that refuses
    /// every token: the shared default limit (5 in 30 s) holds, and every request fails typed.
    @Test func aServerThatRefusesEveryTokenNeverLoopsAcrossAPIs() async throws {
        let (server, store, apis, _) = try Self.sharedStore(apis: 3)
        let promises: [Promise<OK>] = (0..<150).map { i in apis[i % 3].request(route: apis[i % 3].get(endpoint: "/always401/\(i)")) }
        for promise in promises {
            switch await apiError(of: promise) {
            case .authentication(.stillUnauthorized(401))?, .authentication(.tooManyRefreshes(5, 30))?: break
            case let other: Issue.record("expected stillUnauthorized or tooManyRefreshes, got \(String(describing: other))")
            }
        }
        #expect((1...5).contains(server.refreshCount))
        #expect(server.refreshCount == store.refreshCalls)
        // Each request went out once, and again at most once for each refresh: after its own, and
        // after each that replaced the credentials its replay was refused with.
        #expect((150...(150 * (1 + server.refreshCount))).contains(server.tokens.count))
    }

    /// Delegates made and freed one after another on one API, each with the expired token: each
    /// refreshes once for itself, whatever address it has.
    @Test func freshDelegatesOneAfterAnotherEachRefresh() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        var previous: WeakRef<RefreshCoordinator>?
        for i in 0..<300 {
            let store = SessionStore(server)
            api.delegate = store
            let coordinator = try #require(api.signer?.refresher)
            #expect(coordinator.generation == 0 && coordinator.inFlight == nil)
            // The last delegate's coordinator went with its API's hold on it.
            if let previous { #expect(await eventually { previous.isFreed }) }
            previous = WeakRef(coordinator)
            #expect(try await api.secure(i).value.ok)
            #expect(store.refreshCalls == 1)
            #expect(server.refreshCount == i + 1)
        }
        api.delegate = nil
    }

    /// A delegate freed while a refresh it started still runs, its coordinator kept by that
    /// refresh: a new delegate, at that address or another, never joins the old refresh.
    @Test func aDelegateAtAFreedOnesAddressNeverJoinsItsRunningRefresh() async throws {
        final class Pending: APIDelegate, @unchecked Sendable {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) {}
            let resolvers: Resolvers
            init(_ resolvers: Resolvers) { self.resolvers = resolvers }
            func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
                let (promise, resolver) = Promise<Void>.pending(in: .global())
                resolvers.add(resolver)
                return promise
            }
        }
        final class Resolvers: @unchecked Sendable {
            private let lock = NSLock()
            private var all: [Promise<Void>.Resolver] = []
            func add(_ resolver: Promise<Void>.Resolver) { lock.withLock { all.append(resolver) } }
            func resolveAll() { lock.withLock { all }.forEach { $0.resolve(.success(())) } }
        }
        let resolvers = Resolvers()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 600), transport: StubTransport(), responseQueue: .global())
        var reused = 0
        var previousID: ObjectIdentifier?
        for _ in 0..<2000 {
            var delegate: Pending? = Pending(resolvers)
            let id = ObjectIdentifier(try #require(delegate))
            if id == previousID { reused += 1 }
            api.delegate = delegate
            do {
                let signer = try #require(api.signer)
                #expect(signer.refresher.inFlight == nil && signer.refresher.generation == 0)
                _ = signer.refresh(signedWith: 0, for: api)
                #expect(signer.refresher.inFlight != nil)
            }
            api.delegate = nil
            delegate = nil
            previousID = id
        }
        // Without reuse this test shows nothing.
        #expect(reused > 0)
        resolvers.resolveAll()
    }

    /// Ten APIs given one delegate at once, from as many threads, while others drop theirs: they
    /// all find one coordinator, and one refresh serves them.
    @Test func apisGivenOneDelegateFromManyThreadsAtOnceShareOneCoordinator() async throws {
        let server = try AuthServer()
        let store = SessionStore(server)
        for _ in 0..<50 {
            let apis = (0..<10).map { _ in AuthAPI(server) }
            DispatchQueue.concurrentPerform(iterations: 20) { i in
                if i < 10 { apis[i].delegate = store } else { _ = RefreshCoordinator.of(SessionStore(server)) }
            }
            let coordinators = apis.compactMap { $0.signer?.refresher }
            #expect(coordinators.count == 10 && coordinators.allSatisfy { $0 === coordinators[0] })
        }
        let apis = (0..<10).map { _ in AuthAPI(server) }
        DispatchQueue.concurrentPerform(iterations: 10) { apis[$0].delegate = store }
        let promises = (0..<30).flatMap { i in apis.enumerated().map { $0.element.secure($0.offset * 100 + i) } }
        for promise in promises { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
    }

    /// Requests on one API waiting for the refresh another API's request started are cancelled:
    /// they end at once, cancelled; the refresh goes on for everyone else.
    @Test func cancellingWaitersOnOneAPIWhileAnothersRefreshRuns() async throws {
        let (server, store, apis, gate, started) = try await Self.heldRefresh()
        let (first, second) = (apis[0], apis[1])
        let waiting = (1...20).map { second.secure($0) }
        let firsts = (21...30).map { first.secure($0) }
        let (cancelled, kept) = (waiting.prefix(10), waiting.suffix(10))
        cancelled.forEach { $0.cancel() }
        for promise in cancelled { #expect(await apiError(of: promise)?.caseName == "cancelled") }
        #expect(first.signer?.refresher.inFlight != nil)
        gate.signal()
        for promise in [started] + kept + firsts { #expect(try await promise.value.ok) }
        #expect(server.refreshCount == 1 && store.refreshCalls == 1)
        #expect(server.tokens.filter { $0 == "t1" }.count == 21)
        #expect(server.tokens.filter { $0 == "t0" }.count == 1)
    }

    /// Two APIs share a delegate; one allows 2 refreshes in 300 s, the other 10 in 1 ms. After
    /// the first API's two refreshes its next request is refused by its limit; then one refresh
    /// for the second API's request, and the first API's limit should still count 3 refreshes in
    /// its 300 s. Before 3cb516e it counted 1: RefreshState.decide purged the shared history
    /// with the window of whichever API asked, and the second's 1 ms window dropped the first's
    /// two.
    @Test func aShortWindowOfOneAPIForgetsNoRefreshAnotherAPIsLimitCounts() async throws {
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

extension SharedDelegateRefreshAttackTests {
    /// An ``AuthServer``, one ``SessionStore`` of it, and `apis` ``AuthAPI``s of it (the one at
    /// `cached` with an ``HTTPCache``) that all have that store as their delegate. `held`, the
    /// server's first refresh waits until the test signals `gate`.
    static func sharedStore(apis count: Int = 2, cached: Int? = nil, held: Bool = false) throws
        -> (server: AuthServer, store: SessionStore, apis: [AuthAPI], gate: DispatchSemaphore) {
        let server = try AuthServer()
        let gate = DispatchSemaphore(value: 0)
        if held { server.script(.waitThenIssue(gate)) }
        let store = SessionStore(server)
        let apis = (0..<count).map { index in
            index == cached ? AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, cache: HTTPCache())) : AuthAPI(server)
        }
        apis.forEach { $0.delegate = store }
        return (server, store, apis, gate)
    }

    /// `sharedStore`, held, and the refresh started by the first API's request 0 (`started`),
    /// waiting at the server for the test to signal `gate`.
    static func heldRefresh(apis count: Int = 2, cached: Int? = nil) async throws
        -> (server: AuthServer, store: SessionStore, apis: [AuthAPI], gate: DispatchSemaphore, started: Promise<OK>) {
        let (server, store, apis, gate) = try sharedStore(apis: count, cached: cached, held: true)
        let started = apis[0].secure(0)
        #expect(await eventually { server.refreshCount == 1 })
        return (server, store, apis, gate, started)
    }
}

/// A delegate whose refreshes wait for the test's signal, then run as `inner`'s.
final class GatedStore: APIDelegate, @unchecked Sendable {
    let inner: SessionStore
    let gate = DispatchSemaphore(value: 0)
    let calls = Counter()
    private let lock = NSLock()
    private var apis: [ObjectIdentifier] = []

    init(_ inner: SessionStore) { self.inner = inner }

    /// The APIs each refresh was handed, in order.
    var handed: [ObjectIdentifier] { lock.withLock { apis } }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        try inner.api(api, willSend: &request)
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        _ = calls.add(1)
        lock.withLock { apis.append(ObjectIdentifier(api)) }
        let (promise, resolver) = Promise<Void>.pending(in: .global())
        DispatchQueue.global().async { [inner, gate] in
            gate.wait()
            inner.refreshCredentials(for: api).onResult(in: .global()) { resolver.resolve($0) }
        }
        return promise
    }
}

/// Pages (`?page=1` to 3, then an empty one) and an event stream for the newest token the
/// ``AuthServer`` issued; 401 for any other. It records the path and token of each request.
final class TokenCheckedServer: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(path: String, token: String)] = []
    private(set) var server: LoopbackServer!

    init(_ auth: AuthServer) throws {
        server = try LoopbackServer { [weak self, weak auth] request in
            guard let self, let auth else { return ServerResponse().with(.hangUp) }
            return self.handle(request, newest: auth.currentToken)
        }
    }

    deinit { server.stop() }

    /// The paths, with their page, of the requests signed with `token`, sorted.
    func paths(signedWith token: String) -> [String] {
        lock.withLock { seen.filter { $0.token == token }.map(\.path) }.sorted()
    }

    private func handle(_ request: RecordedRequest, newest: String) -> ServerResponse {
        let token = request.headers["Authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
        let page = request.queryItems.first { $0.name == "page" }?.value
        lock.withLock { seen.append((request.path + (page.map { "?page=\($0)" } ?? ""), token)) }
        guard token == newest, token != "t0" else { return .json(#"{"code": 401, "message": "expired"}"#, status: 401) }
        if request.path == "/events" {
            // One event, then silence until the client goes.
            let event = "data: hello\n\n"
            return ServerResponse(status: 200, headers: ["Content-Type": "text/event-stream"],
                                  body: Data((event + String(repeating: " ", count: 64)).utf8))
                .with(.stalled(afterBytes: event.utf8.count, seconds: 30))
        }
        let number = page.flatMap(Int.init) ?? 1
        return .json(number <= 3 ? "[\(number)]" : "[]")
    }
}
