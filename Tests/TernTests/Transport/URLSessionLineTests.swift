#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking
import Testing
import Tern
@testable import TernTransport

/// On Linux, requests to a plain-HTTP origin past the session's connections per host wait in
/// Tern, not in FoundationNetworking: cancelling thousands of its tasks at once (when they timed
/// out together) kept both cores busy for a second and held back every callback.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct URLSessionLineTests {
    /// Counts the requests handed to the transport.
    final class Sent: Plugin {
        let requests = Recorder<URL?>()
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .willSend(let request) = event { requests.append(request.url) }
        }
    }

    /// How many tasks Tern has given the session and not seen complete. Not the session's own
    /// `getAllTasks`: FoundationNetworking reads its tasks there on the delegate's queue while it
    /// adds and removes them on another, and crashed the process once in CI (a null pointer in
    /// `getAllTasks`' `map`, as the held requests' tasks were made).
    func taskCount(_ transport: URLSessionTransport) -> Int {
        (transport.session.delegate as? SessionExchanges)?.tasksInFlight ?? -1
    }

    /// Through FoundationNetworking's URLCache a cancel meeting a completion crashed the process
    /// in one run of the cancel storms in six; the session a transport makes keeps none, a
    /// session given to it keeps what it has.
    @Test func theSessionATransportMakesKeepsNoURLCache() {
        #expect(URLSessionTransport().session.configuration.urlCache == nil)
        #expect(URLSessionTransport(configuration: .ephemeral).session.configuration.urlCache == nil)
        let own = URLSession(configuration: .default)
        defer { own.invalidateAndCancel() }
        #expect(URLSessionTransport(session: own).session.configuration.urlCache != nil)
    }

    @Test func pastTheCapRequestsWaitInTernAndRunInTurn() async throws {
        // The first two connections are held until the test lets them go (the client may keep a
        // cancelled connection open a while: once, under the sanitizer, the held reads outlasted
        // the test's minute); the rest answer at once.
        let release = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                if connection.index < 2 {
                    _ = release.wait(timeout: .now() + 50)
                    release.signal()
                }
                connection.send(RawServer.Connection.response("ok"))
            }
        }
        defer { server.stop() }
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 2
        let transport = URLSessionTransport(configuration: configuration)
        let sent = Sent()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [sent]), transport: transport, responseQueue: .global())
        let held: [Promise<String>] = (0..<2).map { _ in api.request(route: .get(server.baseURL + "/held")) }
        let waiting: [Promise<String>] = (0..<10).map { _ in api.request(route: .get(server.baseURL + "/waiting")) }
        #expect(await eventually { sent.requests.items.count == 12 })
        // Every request has gone to the transport; the session is given two tasks (the second
        // may come just after the plugin saw its request: under the sanitizer it once came after
        // the first count), and no more.
        var counts = [taskCount(transport)]
        while counts.last ?? 0 < 2, counts.count < 200 {
            try await Task.sleep(for: .milliseconds(50))
            counts.append(taskCount(transport))
        }
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(5))
            counts.append(taskCount(transport))
        }
        #expect(counts.drop { $0 < 2 }.allSatisfy { $0 == 2 } && counts.last == 2, "tasks seen: \(counts)")
        // One that waits is cancelled: it settles at once, without a task.
        waiting[0].cancel()
        #expect(await apiError(of: waiting[0])?.isCancellation == true)
        #expect(held.allSatisfy { $0.isPending })
        // The held ones end: the rest run in turn, on connections of their own.
        held.forEach { $0.cancel() }
        release.signal()
        for promise in waiting.dropFirst() {
            #expect(try await promise.value == "ok")
        }
        #expect(taskCount(transport) == 0)
    }
}
#endif
