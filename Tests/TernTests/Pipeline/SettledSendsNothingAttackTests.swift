import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Once a request has settled (cancelled, timed out), nothing more goes on the wire for it,
/// whatever would have sent it again on its own: a redirect's next leg, a retry after its
/// backoff, the replay after a credentials refresh, a download resumed with `Range`, an event
/// source's reconnection. Each window is forced, not hoped for: the end lands as a plugin hears
/// the next attempt announced (`willSend`, on the pipeline's queue, after the state machine took
/// the send and before the transport is asked), or while the transport's task of the first
/// exchange is held back from the pipeline (as on a loaded machine), from the transport's thread
/// at the head or before the end is heard. Against real servers on 127.0.0.1 that count what
/// they receive: the outcome is typed, the transport is asked once, the server reads one
/// request, plugins hear each attempt announced answered once, and a download leaves no file at
/// its destination.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(5))) struct SettledSendsNothingAttackTests {
    typealias Seam = MetricsSeamAttackTests
    typealias Pass = PassThroughCacheAttackTests

    /// What sends the request again on its own, after a first exchange.
    enum Again: String, CaseIterable, Sendable {
        /// A `302` to follow.
        case redirect
        /// A `503` to retry, with `Retry-After: 0`.
        case retry
        /// A `401`: the delegate refreshes, and the request is replayed.
        case refresh
        /// A download cut after 400 of its 1000 bytes: the retry asks for the rest with `Range`.
        case resumedDownload
        /// As `resumedDownload`, but the server answers the `Range` with a `416`: the third
        /// attempt starts the file over. Its window is the third attempt's, so it has a test of
        /// its own and is not among `allCases`.
        case restartedDownload

        static let allCases: [Again] = [.redirect, .retry, .refresh, .resumedDownload]
    }

    /// What ends the request, and where.
    enum Ender: String, CaseIterable, Sendable {
        /// A cancel on the thread of the hook itself.
        case cancelInline
        /// A cancel from another thread, which the hook waits for.
        case cancelFromAnotherThread
        /// The hook waits until the request's timeout has ended it.
        case timeout
    }

    /// The request's timeout when the `timeout` ender ends it.
    static let shortTimeout: TimeInterval = 2

    static let whole = String(repeating: "0123456789", count: 100)

    /// The server's answer to request `number` (from 1) for `again`, and whether the connection
    /// closes after it (a cut body).
    static func answer(_ again: Again, _ number: Int) -> (String, close: Bool) {
        guard number == 1 else {
            if again == .restartedDownload, number == 2 {
                return ("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */1000\r\nContent-Length: 0\r\n\r\n", false)
            }
            if again == .restartedDownload {
                return ("HTTP/1.1 200 OK\r\nETag: \"d1\"\r\nContent-Length: 1000\r\n\r\n" + whole, false)
            }
            if again == .resumedDownload {
                let rest = String(whole.dropFirst(399))
                return ("HTTP/1.1 206 Partial Content\r\nETag: \"d1\"\r\nContent-Range: bytes 399-999/1000\r\nContent-Length: 601\r\n\r\n" + rest, false)
            }
            return (RawServer.Connection.response("two"), false)
        }
        return switch again {
        case .redirect: ("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n", false)
        case .retry: (RawServer.Connection.response("busy", status: "503 Service Unavailable", headers: "Retry-After: 0\r\n"), false)
        case .refresh: (RawServer.Connection.response("no", status: "401 Unauthorized"), false)
        case .resumedDownload, .restartedDownload: ("HTTP/1.1 200 OK\r\nETag: \"d1\"\r\nContent-Length: 1000\r\n\r\n" + whole.prefix(400), true)
        }
    }

    /// Counts the requests it reads, answering as `again` says.
    static func server(_ again: Again, count: Seam.Counter) throws -> RawServer {
        try RawServer { connection in
            while connection.readRequest() != nil {
                let (answer, close) = Self.answer(again, count.next())
                guard connection.send(answer), !close else { return }
            }
        }
    }

    /// Refreshes at once, counting its refreshes.
    final class Refreshing: APIDelegate, @unchecked Sendable {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) {}
        let refreshes = Seam.Counter()
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            _ = refreshes.next()
            return Promise(value: (), in: .global())
        }
    }

    /// Runs `hook` with the number (from 1) of each attempt announced to plugins, as it is; or,
    /// `onRetry`, of each retry (an event source's reconnection) announced before its wait.
    final class SendHook: Plugin, @unchecked Sendable {   // unchecked: its state is `let`s
        let sends = Seam.Counter()
        let onRetry: Bool
        let hook: @Sendable (Int) -> Void
        init(onRetry: Bool = false, _ hook: @escaping @Sendable (Int) -> Void) { (self.onRetry, self.hook) = (onRetry, hook) }
        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend where !onRetry, .didRetry where onRetry: hook(sends.next())
            default: break
            }
        }
    }

    /// Runs `hook` with the number (from 1) of each time it adapts a request: each attempt, as
    /// its stages begin, before the state machine takes its send.
    struct AdaptHook: RequestAdapter {
        let adapts = Seam.Counter()
        let hook: @Sendable (Int) -> Void
        func adapt(_ request: inout URLRequest) throws { hook(adapts.next()) }
    }

    /// The request under test, once the test has its promise: how to cancel it, and whether it
    /// has settled.
    struct Pending: Sendable {
        let cancel: @Sendable () -> Void
        let isSettled: @Sendable () -> Bool
    }

    /// Ends the request as `ender` says, from a hook that runs on the pipeline's queue or the
    /// transport's thread: `pending` holds the request once the test has its promise. Notes in
    /// `ended` whether the cancel returned, or the timeout came while the hook waited.
    static func end(by ender: Ender, cancels pending: Recorder<Pending>, ended: Recorder<Bool>) {
        // The request may be sent before the test has its promise in hand: it waits for it.
        let deadline = Date().addingTimeInterval(20)
        while pending.items.isEmpty, Date() < deadline { usleep(1_000) }
        guard let request = pending.items.first else { return ended.append(false) }
        switch ender {
        case .cancelInline, .cancelFromAnotherThread:
            let cancel = request.cancel
            guard ender == .cancelFromAnotherThread else {
                cancel()
                return ended.append(true)
            }
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                cancel()
                done.signal()
            }
            ended.append(done.wait(timeout: .now() + 20) == .success)
        case .timeout:
            // Until the request's timer has ended it, however late a loaded machine fires it.
            while !request.isSettled(), Date() < deadline { usleep(1_000) }
            ended.append(request.isSettled())
        }
    }

    static func outcome<Value>(_ result: Result<Value, any Error>) -> String {
        switch result {
        case .success: "succeeded"
        case .failure(let error): Pass.name(error)
        }
    }

    /// Sends the request `again` is about through `api` (a download to `destination`), hands it
    /// to `cancels`, and returns its outcome.
    static func run(_ again: Again, api: AbstractAPI, url: String, destination: URL, cancels: Recorder<Pending>) async -> String {
        if again == .resumedDownload || again == .restartedDownload {
            let promise = api.download(route: .get(url), to: destination)
            cancels.append(Pending(cancel: { promise.cancel() }, isSettled: { !promise.isPending }))
            return outcome(await promise.result)
        }
        let promise: Promise<Response> = api.request(route: .get(url))
        cancels.append(Pending(cancel: { promise.cancel() }, isSettled: { !promise.isPending }))
        return outcome(await promise.result)
    }

    /// What is left in `directory` of a download to `destination` that did not succeed: nothing
    /// at the destination, and nothing but the resume record and the partial file it names.
    static func leftovers(in directory: URL, destination: URL) -> String? {
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        if files.contains(destination.lastPathComponent) { return "a file at the destination: \(files)" }
        guard let pending = ResumableDownload.pending(for: destination) else {
            return files.isEmpty ? nil : "no resume record, but \(files)"
        }
        let kept: Set = [".\(destination.lastPathComponent).tern-resume", pending.partialFile.lastPathComponent]
        return files == kept ? nil : "beside the record: \(files)"
    }

    /// A scene: a server for `again`, an API through `transport` (the test's own if `nil`)
    /// with `plugins` and a short timeout for the `timeout` ender, a directory for a download.
    struct Scene {
        let count = Seam.Counter()
        let server: RawServer
        let api: AbstractAPI
        let delegate = Refreshing()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-settled-\(UUID())")
        var destination: URL { directory.appendingPathComponent("file") }

        init(_ again: Again, ender: Ender, adapters: [any RequestAdapter] = [], plugins: [any Plugin], transport: any Transport) throws {
            server = try SettledSendsNothingAttackTests.server(again, count: count)
            let policy = [.retry, .resumedDownload, .restartedDownload].contains(again) ? RetryPolicy(maxRetries: 1, baseDelay: 0.01) : .never
            let configuration = APIConfiguration(timeout: ender == .timeout ? SettledSendsNothingAttackTests.shortTimeout : 30,
                                                 retryPolicy: policy, adapters: adapters, plugins: plugins)
            api = AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
            if again == .refresh { api.delegate = delegate }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }

        func stop() {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Checks what a request ended by `ender` left: its `outcome`, the end returned
        /// (`ended`), the transport asked and the server reached `exchanges` times, plugins hearing
        /// `announced` attempts each answered once and the failure once, `refreshes` refreshes,
        /// and no file at a download's destination.
        func expectNothingMoreSent(_ outcome: String, ender: Ender, ended: Recorder<Bool>, through transport: Pass.Interposer,
                                   log: Seam.Log, announced: Int, exchanges: Int = 1, refreshes: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            #expect(outcome == (ender == .timeout ? "timeout" : "cancelled"), sourceLocation: sourceLocation)
            #expect(await eventually { !ended.items.isEmpty } && ended.items == [true], "the end did not return", sourceLocation: sourceLocation)
            // Past what a send after the end would take to reach the transport, and the server.
            try await Task.sleep(for: .milliseconds(300))
            #expect(transport.sends.value == exchanges, "the transport was asked to send \(transport.sends.value) exchanges", sourceLocation: sourceLocation)
            #expect(count.value == exchanges, "the server read \(count.value) requests", sourceLocation: sourceLocation)
            let failed = { @Sendable in log.events.items.filter { if case .didFail = $0 { true } else { false } }.count }
            #expect(await eventually { failed() >= 1 && log.answers.count >= announced }, sourceLocation: sourceLocation)
            let failures = failed()
            #expect(log.sends.count == announced && log.answers.count == announced && failures == 1, "\(log.events.items)",
                    sourceLocation: sourceLocation)
            #expect(delegate.refreshes.value == refreshes, sourceLocation: sourceLocation)
            if let left = SettledSendsNothingAttackTests.leftovers(in: directory, destination: destination) {
                Issue.record(Comment(rawValue: left), sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: As the next attempt is announced

    /// The first exchange asks for another (a redirect, a retry, a refresh's replay, a
    /// download's resume); the request ends as plugins hear the second attempt announced: after
    /// the state machine took its send, before the transport is asked. It settles `cancelled` or
    /// `timeout`; the transport is asked for the first exchange alone, the server reads one
    /// request; plugins heard both attempts announced and each answered once (the second with
    /// the end), and the failure once.
    @Test(arguments: Again.allCases, Ender.allCases)
    func anEndAsTheNextAttemptIsAnnouncedSendsNothing(again: Again, ender: Ender) async throws {
        let cancels = Recorder<Pending>()
        let ended = Recorder<Bool>()
        let log = Seam.Log()
        let hook = SendHook { number in
            guard number == 2 else { return }
            Self.end(by: ender, cancels: cancels, ended: ended)
        }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport()) { _ in }
        let scene = try Scene(again, ender: ender, plugins: [log, hook], transport: transport)
        defer { scene.stop() }
        let outcome = await Self.run(again, api: scene.api, url: scene.server.baseURL + "/first", destination: scene.destination, cancels: cancels)
        try await scene.expectNothingMoreSent(outcome, ender: ender, ended: ended, through: transport, log: log, announced: 2,
                                              refreshes: again == .refresh ? 1 : 0)
    }

    /// A download cut short is resumed with `Range`, the server answers `416`, and the file
    /// starts over: the request ends as plugins hear that third attempt announced. It settles
    /// `cancelled` or `timeout`; the transport is asked for the two exchanges before it alone,
    /// the server reads two requests, and no file is left at the destination.
    @Test(arguments: Ender.allCases)
    func anEndAsADownloadStartsOverSendsNothing(ender: Ender) async throws {
        let cancels = Recorder<Pending>()
        let ended = Recorder<Bool>()
        let log = Seam.Log()
        let hook = SendHook { number in
            guard number == 3 else { return }
            Self.end(by: ender, cancels: cancels, ended: ended)
        }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport()) { _ in }
        let scene = try Scene(.restartedDownload, ender: ender, plugins: [log, hook], transport: transport)
        defer { scene.stop() }
        let outcome = await Self.run(.restartedDownload, api: scene.api, url: scene.server.baseURL + "/first", destination: scene.destination,
                                     cancels: cancels)
        try await scene.expectNothingMoreSent(outcome, ender: ender, ended: ended, through: transport, log: log, announced: 3, exchanges: 2)
    }

    /// The first exchange asks for another; the request ends as an adapter adapts the second
    /// attempt, before the state machine takes its send. It settles `cancelled` or `timeout`;
    /// the second attempt is never announced to plugins nor sent: the transport is asked once,
    /// the server reads one request, plugins hear one attempt, its answer, and the failure.
    @Test(arguments: Again.allCases, [Ender.cancelFromAnotherThread])
    func anEndAsTheNextAttemptIsAdaptedSendsNothing(again: Again, ender: Ender) async throws {
        let cancels = Recorder<Pending>()
        let ended = Recorder<Bool>()
        let log = Seam.Log()
        let adapter = AdaptHook { number in
            guard number == 2 else { return }
            Self.end(by: ender, cancels: cancels, ended: ended)
        }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport()) { _ in }
        let scene = try Scene(again, ender: ender, adapters: [adapter], plugins: [log], transport: transport)
        defer { scene.stop() }
        let outcome = await Self.run(again, api: scene.api, url: scene.server.baseURL + "/first", destination: scene.destination, cancels: cancels)
        try await scene.expectNothingMoreSent(outcome, ender: ender, ended: ended, through: transport, log: log, announced: 1,
                                              refreshes: again == .refresh ? 1 : 0)
        #expect(adapter.adapts.value == 2)
    }

    /// A first exchange to retry (a `503`, a download cut short); the request ends as plugins
    /// hear the retry announced, before its backoff's wait is scheduled. It settles `cancelled`
    /// or `timeout`; the wait, scheduled after the end, is stopped: the transport is asked once,
    /// the server reads one request, plugins hear one attempt, its answer, and the failure.
    @Test(arguments: [Again.retry, .resumedDownload], Ender.allCases)
    func anEndAsARetryIsAnnouncedSendsNothing(again: Again, ender: Ender) async throws {
        let cancels = Recorder<Pending>()
        let ended = Recorder<Bool>()
        let log = Seam.Log()
        let hook = SendHook(onRetry: true) { _ in Self.end(by: ender, cancels: cancels, ended: ended) }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport()) { _ in }
        let scene = try Scene(again, ender: ender, plugins: [log, hook], transport: transport)
        defer { scene.stop() }
        let outcome = await Self.run(again, api: scene.api, url: scene.server.baseURL + "/first", destination: scene.destination, cancels: cancels)
        // The backoff (10 ms) ends within the wait for a late send.
        try await scene.expectNothingMoreSent(outcome, ender: ender, ended: ended, through: transport, log: log, announced: 1)
    }

    // MARK: While the pipeline has no task

    /// Where, in the first exchange, the request ends while the pipeline has not yet been handed
    /// the exchange's task.
    enum Moment: String, CaseIterable, Sendable {
        /// As its head comes, from another thread, the transport's waiting.
        case cancelAtTheHead
        /// As its head comes, on the transport's thread.
        case cancelAtTheHeadInline
        /// After its body, before its end is heard, from another thread, the transport's waiting.
        case cancelBeforeTheEnd
        /// The transport's thread waits at the head past the request's timeout.
        case timeoutAtTheHead
    }

    /// The first exchange, whose task the pipeline (on its own queue: a plugin is app code) is
    /// handed only once its end has been heard, would have the request sent again (a redirect,
    /// a retry, a refresh's replay, a download's resume); the request ends during it, from the
    /// transport's thread, when the pipeline has no task to cancel. It settles `cancelled` or
    /// `timeout`; nothing more is sent: the transport is asked once, the server reads one
    /// request, plugins hear one attempt and its one answer; a download leaves nothing at its
    /// destination.
    @Test(arguments: Again.allCases, Moment.allCases)
    func anEndBeforeTheTaskIsHandedOverSendsNothingMore(again: Again, moment: Moment) async throws {
        let cancels = Recorder<Pending>()
        let ended = Recorder<Bool>()
        let ender: Ender = switch moment {
        case .timeoutAtTheHead: .timeout
        case .cancelAtTheHeadInline: .cancelInline
        case .cancelAtTheHead, .cancelBeforeTheEnd: .cancelFromAnotherThread
        }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport(), holdingTheTaskOf: 1, atHead: { number in
            guard number == 1, moment != .cancelBeforeTheEnd else { return }
            Self.end(by: ender, cancels: cancels, ended: ended)
        }, beforeEnd: { number in
            guard number == 1, moment == .cancelBeforeTheEnd else { return }
            Self.end(by: ender, cancels: cancels, ended: ended)
        })
        let log = Seam.Log()
        let scene = try Scene(again, ender: ender, plugins: [log], transport: transport)
        defer { scene.stop() }
        let outcome = await Self.run(again, api: scene.api, url: scene.server.baseURL + "/first", destination: scene.destination, cancels: cancels)
        try await scene.expectNothingMoreSent(outcome, ender: ender, ended: ended, through: transport, log: log, announced: 1)
    }

    // MARK: An event source's reconnection

    /// An event source whose first connection brings an event and ends: the consumer's task is
    /// cancelled as plugins hear the reconnection's request announced (the hook waits until the
    /// request has heard the cancel), or, `beforeTheWait`, as they hear the reconnection itself
    /// announced, before its wait. The source ends with a cancel; the transport is asked for the
    /// first connection alone, the server reads one request, and plugins hear each request
    /// announced answered once.
    @Test(arguments: [false, true]) func aCancelAsAnEventSourceReconnectsSendsNothing(beforeTheWait: Bool) async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = count.next()
            let body = "id: 1\nretry: 10\ndata: first\n\n"
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        }
        defer { server.stop() }
        let log = Seam.Log()
        let consumers = Recorder<Task<[String], any Error>>()
        let heard = Recorder<Bool>()
        let hook = SendHook(onRetry: beforeTheWait) { number in
            guard number == (beforeTheWait ? 1 : 2) else { return }
            let deadline = Date().addingTimeInterval(20)
            while consumers.items.isEmpty, Date() < deadline { usleep(1_000) }
            consumers.items.first?.cancel()
            guard !beforeTheWait else { return heard.append(true) }
            // The stream's request hears the cancel where the consumer waits for its head.
            while log.answers.count < 2, Date() < deadline { usleep(1_000) }
            heard.append(log.answers.count == 2)
        }
        let transport = Pass.Interposer(base: TestTransport.make() ?? URLSessionTransport()) { _ in }
        let api = Seam.api(plugins: [log, hook], transport: transport)
        let source = api.events(route: .get(server.baseURL + "/changes"), reconnection: EventReconnection(delay: 0.01, maximumFailures: 3))
        let consumer = Task.onTestThreads {
            var data: [String] = []
            for try await event in source { data.append(event.data) }
            return data
        }
        consumers.append(consumer)
        let result = await consumer.result
        let cancelled = if case .failure(let error) = result { error is CancellationError || Pass.name(error) == "cancelled" } else { false }
        #expect(cancelled, "\(result)")
        #expect(await eventually { !heard.items.isEmpty } && heard.items == [true], "the request did not hear the cancel: \(log.events.items)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(transport.sends.value == 1, "the transport was asked to send \(transport.sends.value) exchanges")
        #expect(count.value == 1, "the server read \(count.value) requests")
        let announced = beforeTheWait ? 1 : 2
        #expect(log.sends.count == announced && log.answers.count == announced, "\(log.events.items)")
    }
}
