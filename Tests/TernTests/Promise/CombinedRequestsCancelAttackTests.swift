import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Promise.all`, `all(maxConcurrent:)`, `race` and `any` over real requests, on whichever
/// transport the suite runs: what the combined promise gives up (a cancel, a loss, a failure) is
/// cancelled down to the wire, which the server sees as its connection closing, and every part
/// settles once, typed.
@Suite(.onTestThreads, .timeLimit(.minutes(3))) struct CombinedRequestsCancelAttackTests {
    /// Cancelling the combined promise cancels every request it combines: each fails
    /// `.cancelled`, and the server sees each connection close.
    @Test(arguments: ["all", "race", "any"])
    func cancellingTheCombinedPromiseClosesEveryConnection(_ kind: String) async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let api = try Self.api(server)
        let parts = (0..<3).map { api.product("/stall/\($0)") }
        let combined: Promise<Product> = switch kind {
        case "all": Promise.all(parts, in: .global()).map { $0[0] }
        case "race": Promise.race(parts, in: .global())
        default: Promise.any(parts, in: .global())
        }
        #expect(await eventually { server.opened.items.count == 3 })
        combined.cancel()
        #expect(Self.error(await combined.result)?.caseName == "cancelled")
        for part in parts { #expect(Self.error(await part.result)?.caseName == "cancelled") }
        #expect(await eventually(timeout: 30) { server.closed.items.count == 3 }, "closed: \(server.closed.items)")
    }

    /// A race is won by the quick answer; the losers are cancelled, and their connections close.
    /// `any` alike, and `all` on the first failure.
    @Test(arguments: ["all", "race", "any"])
    func whatTheCombinedPromiseNoLongerNeedsIsClosed(_ kind: String) async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let api = try Self.api(server)
        let stalled = (0..<2).map { api.product("/stall/\($0)") }
        #expect(await eventually { server.opened.items.count == 2 })
        let quick = api.product(kind == "all" ? "/fail" : "/fast")
        let combined: Promise<Product> = switch kind {
        case "all": Promise.all(stalled + [quick], in: .global()).map { $0[0] }
        case "race": Promise.race(stalled + [quick], in: .global())
        default: Promise.any(stalled + [quick], in: .global())
        }
        let result = await combined.result
        if kind == "all" {
            #expect(Self.error(result)?.caseName == "unacceptableStatus")
        } else {
            #expect((try? result.get()) == Product(name: "quick", price: 1))
        }
        for part in stalled { #expect(Self.error(await part.result)?.caseName == "cancelled") }
        #expect(await eventually(timeout: 10) { server.closed.items.count == 2 }, "closed: \(server.closed.items)")
    }

    /// `all(maxConcurrent:)` cancelled while it runs two requests of four: those two are
    /// cancelled and closed, and the other two are never made.
    @Test func cancellingAThrottledRunCancelsWhatRunsAndStartsNothing() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let api = try Self.api(server)
        let made = Recorder<Promise<Product>>()
        let work: [@Sendable () -> Promise<Product>] = (0..<4).map { index in
            { let part = api.product("/stall/\(index)"); made.append(part); return part }
        }
        let combined = Promise.all(maxConcurrent: 2, in: .global(), work)
        #expect(await eventually { server.opened.items.count == 2 })
        combined.cancel()
        #expect(Self.error(await combined.result)?.caseName == "cancelled")
        for part in made.items { #expect(Self.error(await part.result)?.caseName == "cancelled") }
        #expect(await eventually(timeout: 10) { server.closed.items.count == 2 }, "closed: \(server.closed.items)")
        #expect(made.items.count == 2)
    }

    /// `all(maxConcurrent:)` is cancelled while its next piece of work is being made (a slot
    /// freed as the first request was answered): the request that work makes is cancelled too,
    /// rather than left to run to its timeout with nothing waiting for it.
    @Test func aRequestMadeAsTheThrottledRunIsCancelledIsCancelledToo() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let api = try Self.api(server)
        let making = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let made = Recorder<Promise<Product>>()
        let work: [@Sendable () -> Promise<Product>] = [
            { api.product("/fast") },
            {
                making.signal()
                release.wait()
                let part = api.product("/stall/1")
                made.append(part)
                return part
            },
        ]
        let combined = Promise.all(maxConcurrent: 1, in: .global(), work)
        #expect(await Self.waited(making))
        combined.cancel()
        #expect(Self.error(await combined.result)?.caseName == "cancelled")
        release.signal()
        #expect(await eventually { made.items.count == 1 })
        // Settled by the cancel, not by the request's timeout a minute on.
        #expect(await eventually(timeout: 10) { made.items.first?.currentResult != nil })
        #expect(Self.error(made.items.first?.currentResult)?.caseName == "cancelled")
        // Sent or not, no connection stays open for it.
        #expect(await eventually(timeout: 10) { server.closed.items.count == server.opened.items.count },
                "opened: \(server.opened.items), closed: \(server.closed.items)")
    }

    // MARK: Helpers

    /// An API on `server` whose requests would wait a minute for a stalled answer.
    private static func api(_ server: StallingServer) throws -> TestAPI {
        try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 60, retryPolicy: .never))
    }

    private static func error<Value>(_ result: Result<Value, any Error>?) -> APIError? {
        guard case .failure(let error)? = result else { return nil }
        return error as? APIError
    }

    /// Waits for `semaphore` off the test's thread, for at most 30 s.
    private static func waited(_ semaphore: DispatchSemaphore) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: semaphore.wait(timeout: .now() + 30) == .success) }
        }
    }
}

private extension TestAPI {
    /// A GET of `path`, parsed as a product.
    func product(_ path: String) -> Promise<Product> {
        request(route: get(endpoint: path))
    }
}

/// Answers `/fast` with a product and `/fail` with a 500 at once; never answers `/stall/…`, and
/// records when the client closes a connection that a stalled request is on.
private final class StallingServer: Sendable {
    /// The paths of stalled requests the server read.
    let opened = Recorder<String>()
    /// The paths of stalled requests whose connection the client closed.
    let closed = Recorder<String>()
    private let raw: RawServer

    init() throws {
        let (opened, closed) = (opened, closed)
        raw = try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? ""
                if path.hasPrefix("/stall") {
                    opened.append(path)
                    // Blocks until the client closes (or sends something, which it should not).
                    _ = connection.readAvailable(for: 60, limit: 1)
                    closed.append(path)
                    return
                }
                let (status, body) = path == "/fail" ? ("500 Internal Server Error", #"{"code":1,"message":"no"}"#)
                                                     : ("200 OK", #"{"name":"quick","price":1}"#)
                _ = connection.send("HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
        }
    }

    var baseURL: String { raw.baseURL }

    func stop() { raw.stop() }
}
