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
