import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The window between a plugin hearing `.willSend` and the transport's `send`, on whichever
/// transport the suite runs: a cancel from the plugin itself, one from another thread at that
/// moment, and a timeout of a millisecond or so. Each request settles once, typed; each attempt
/// the plugins heard announced ends with one `didReceive`; the request fails with one `didFail`
/// or succeeds with none.
@Suite(.onTestThreads, .timeLimit(.minutes(3))) struct WillSendWindowAttackTests {
    /// Cancels each request as its plugin hears it announced: at once, on the plugin's thread,
    /// or from another thread, racing the send.
    final class Canceller: Plugin, @unchecked Sendable {
        let entries = Recorder<String>()
        let fromAnotherThread: Bool
        private let lock = NSLock()
        private var promises: [String: Promise<Data>] = [:]

        init(fromAnotherThread: Bool) {
            self.fromAnotherThread = fromAnotherThread
        }

        /// Makes `promise`, the request for `path`, the one cancelled when it is announced.
        func hold(_ promise: Promise<Data>, for path: String) {
            lock.withLock { promises[path] = promise }
        }

        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend(let request):
                let path = request.url!.path
                entries.append("\(path) willSend")
                guard let promise = lock.withLock({ promises[path] }) else { return }
                if fromAnotherThread { DispatchQueue.global().async { promise.cancel() } } else { promise.cancel() }
            case .didReceive(_, let request): entries.append("\(request.url!.path) didReceive")
            case .didFail(_, let request): entries.append("\(request?.url?.path ?? "?") didFail")
            default: break
            }
        }
    }

    @Test(arguments: [false, true])
    func aCancelAsTheRequestIsAnnouncedEndsItOnce(fromAnotherThread: Bool) async throws {
        let server = try LoopbackServer { _ in ServerResponse(status: 200, body: Data("{}".utf8)) }
        defer { server.stop() }
        let canceller = Canceller(fromAnotherThread: fromAnotherThread)
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(plugins: [canceller]))
        var promises: [(String, Promise<Data>)] = []
        for index in 0..<200 {
            let path = "/r\(index)"
            let promise: Promise<Data> = api.request(route: api.get(endpoint: path))
            canceller.hold(promise, for: path)
            promises.append((path, promise))
        }
        try await Self.expectEachEndsOnce(promises, entries: canceller.entries, allowed: ["cancelled"])
    }

    @Test(arguments: [0.001, 0.003, 0.01])
    func aTimeoutOfMillisecondsEndsEachRequestOnce(timeout: TimeInterval) async throws {
        let server = try LoopbackServer { _ in ServerResponse(status: 200, body: Data("{}".utf8)) }
        defer { server.stop() }
        let journal = Canceller(fromAnotherThread: false)
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(plugins: [journal]))
        let promises: [(String, Promise<Data>)] = (0..<200).map { index in
            ("/t\(index)", api.request(route: api.get(endpoint: "/t\(index)"), options: RequestOptions(timeout: timeout)))
        }
        try await Self.expectEachEndsOnce(promises, entries: journal.entries, allowed: ["timeout"])
    }

    /// A clock whose time the test sets, and whose timers never fire: an answer can then come
    /// after the deadline, with the timeout's timer not yet run (a busy machine runs it late).
    final class LateClock: APIClock, @unchecked Sendable {   // unchecked: `now` behind its lock
        private let lock = NSLock()
        private var current: TimeInterval = 0
        var now: TimeInterval {
            get { lock.withLock { current } }
            set { lock.withLock { current = newValue } }
        }
        struct Never: Cancellable { func cancel() {} }
        func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable { Never() }
    }

    /// Moves the late clock past the deadline as the request is announced.
    final class DeadlinePasser: Plugin, @unchecked Sendable {   // unchecked: its parts are Sendable or locked
        let entries = Recorder<String>()
        let clock: LateClock
        init(clock: LateClock) { self.clock = clock }
        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend: entries.append("willSend"); clock.now = 100
            case .didReceive(let result, _): entries.append((try? result.get()).map { _ in "didReceive" } ?? "didReceive failure")
            case .didFail(let error, let request): entries.append("didFail \(error.caseName) \(request == nil ? "without" : "with") its request")
            default: break
            }
        }
    }

    /// The answer came after the deadline, before the timer ran: the request times out as it
    /// would have, and plugins hear the announced attempt's end, then the failure. Its end went
    /// untold (a `.willSend` with no `.didReceive`), as once in a clean-clone CI run of the
    /// millisecond timeouts above over URLSession, on a loaded machine.
    @Test func anAnswerAfterTheDeadlineIsToldToPluginsAsTheAttemptsEnd() async throws {
        let clock = LateClock()
        let passer = DeadlinePasser(clock: clock)
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/late", answers: .json("{}")))
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: "https://late.example", timeout: 10, plugins: [passer]),
                              transport: stubs, responseQueue: .global(), clock: clock)
        let result = await (api.request(route: .get("/late")) as Promise<Data>).result
        guard case .failure(let error) = result else {
            Issue.record("answered after its deadline: \(result)")
            return
        }
        #expect((error as? APIError)?.caseName == "timeout", "\(error)")
        #expect(await eventually(timeout: 5) { passer.entries.items.count >= 3 })
        #expect(passer.entries.items == ["willSend", "didReceive failure", "didFail timeout without its request"])   // no attempt on the wire
    }

    /// Cancels the promise it is given while it decodes the answer, then decodes it.
    final class CancellingParser: ResponseParser {
        let promise = Locked<Promise<[String: String]>?>(nil)
        let given = DispatchSemaphore(value: 0)
        func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            _ = given.wait(timeout: .now() + 30)
            promise.withLock { $0 }?.cancel()
            return try JSONDecoder().decode(type, from: response.body)
        }
    }

    /// The answer came, and a cancel from another thread settled the promise while it decoded
    /// (the request past its end, the cancel's handler found nothing to stop): the caller hears
    /// "cancelled", and so do plugins, once. Their `didFail` went missing once in 200 requests
    /// cancelled from another thread as they went out (the test above, in a thread-sanitized run
    /// over URLSession).
    @Test func aCancelWhileTheAnswerDecodesIsToldToPlugins() async throws {
        let journal = Canceller(fromAnotherThread: false)
        let parser = CancellingParser()
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/decoding", answers: .json(#"{"a": "b"}"#)))
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: "https://decoding.example", plugins: [journal]),
                              transport: stubs, responseQueue: .global())
        let promise: Promise<[String: String]> = api.request(route: .get("/decoding"), options: RequestOptions(parser: parser))
        parser.promise.withLock { $0 = promise }
        parser.given.signal()
        guard case .failure(let error) = await promise.result else {
            Issue.record("fulfilled though cancelled as it decoded")
            return
        }
        #expect((error as? APIError)?.caseName == "cancelled", "\(error)")
        #expect(await eventually(timeout: 5) { journal.entries.items.count >= 3 })
        try await Task.sleep(for: .milliseconds(100))
        // No attempt on the wire: it had ended, answered.
        #expect(journal.entries.items == ["/decoding willSend", "/decoding didReceive", "? didFail"])
    }

    /// Each promise settles, typed (one of `allowed`, or a success); its plugin events pair up.
    private static func expectEachEndsOnce(_ promises: [(String, Promise<Data>)], entries: Recorder<String>, allowed: Set<String>) async throws {
        var failed: [String: Bool] = [:]
        for (path, promise) in promises {
            switch await promise.result {
            case .success: failed[path] = false
            case .failure(let error):
                let name = (error as? APIError)?.caseName ?? "untyped \(error)"
                #expect(allowed.contains(name), "\(path): \(error)")
                failed[path] = true
            }
        }
        // The last events may come just after the promise settles.
        let expected = promises.reduce(0) { sum, entry in
            sum + (failed[entry.0] == true ? 1 : 0)
        }
        #expect(await eventually(timeout: 10) {
            let items = entries.items
            return items.filter { $0.hasSuffix("didFail") }.count >= expected
                && items.filter { $0.hasSuffix("willSend") }.count <= items.filter { $0.hasSuffix("didReceive") }.count
        })
        try await Task.sleep(for: .milliseconds(200))
        let items = entries.items
        for (path, _) in promises {
            let mine = items.filter { $0.hasPrefix(path + " ") }
            let sends = mine.filter { $0.hasSuffix("willSend") }.count
            let receives = mine.filter { $0.hasSuffix("didReceive") }.count
            let fails = mine.filter { $0.hasSuffix("didFail") }.count
            #expect(sends == receives, "\(path): \(mine)")
            #expect(sends <= 1, "\(path): \(mine)")
            // A request that timed out before it was built is failed with no request: counted below.
            #expect(fails <= (failed[path] == true ? 1 : 0), "\(path): \(mine)")
        }
        #expect(items.filter { $0.hasSuffix("didFail") }.count == expected)
    }
}
