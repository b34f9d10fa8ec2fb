import Benchmark
import Foundation
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The single-flight refresh: from the refresh finishing to the last of N waiting requests being
// re-sent, against a plain loop sending N requests through the same API and transport.

/// Answers from memory: 200 at once with the current token; without it, 401 — held back until
/// `batch` requests are waiting, then all at once, so that every request is in flight before the
/// refresh starts (a request that starts during a refresh waits for it instead of being sent).
/// It counts finished exchanges and signals when a count is reached.
final class TokenTransport: WholeResponseTransport, @unchecked Sendable {
    private let lock = NSLock()
    private let batch: Int
    private var held: [@Sendable (Result<TransportResponse, any Error>) -> Void] = []
    /// The token the server accepts: not the client's until the refresh hands it over.
    private var token = "server-side"
    private var sent = 0
    private var finished = 0
    private var waiter: (count: Int, done: DispatchSemaphore)?
    private let ok = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 200, httpVersion: nil, headers: [:])!
    private let refused = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 401, httpVersion: nil, headers: [:])!

    init(batch: Int = 1) {
        self.batch = batch
    }

    func accept(_ newToken: String) {
        lock.lock(); defer { lock.unlock() }
        token = newToken
    }

    func send(_ request: TransportRequest, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
        lock.lock()
        sent += 1
        let valid = request.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer \(token)"
        if !valid { held.append(completion) }
        let release = !valid && held.count >= batch ? held : []
        if !release.isEmpty { held = [] }
        lock.unlock()
        if valid {
            complete(completion, with: ok)
        } else {
            release.forEach { complete($0, with: refused) }
        }
        return NoTask()
    }

    private func complete(_ completion: @Sendable (Result<TransportResponse, any Error>) -> Void, with head: ResponseHead) {
        completion(.success(TransportResponse(head: head, body: Data())))
        lock.lock()
        finished += 1
        let signal = waiter.flatMap { finished >= $0.count ? $0.done : nil }
        if signal != nil { waiter = nil }
        lock.unlock()
        signal?.signal()
    }

    /// Blocks until `count` exchanges in all have finished.
    func wait(untilFinished count: Int) {
        let done = DispatchSemaphore(value: 0)
        lock.lock()
        if finished >= count {
            lock.unlock()
            return
        }
        waiter = (count, done)
        lock.unlock()
        done.wait()
    }
}

/// Signs with its token; its refresh waits until the benchmark releases it.
final class HeldRefresh: APIDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var token = "old"
    private var resolver: Promise<Void>.Resolver?

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        lock.lock(); defer { lock.unlock() }
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        let (promise, resolver) = Promise<Void>.pending(in: .global())
        lock.lock(); self.resolver = resolver; lock.unlock()
        return promise
    }

    func release(with newToken: String) {
        lock.lock()
        token = newToken
        let resolver = self.resolver
        lock.unlock()
        resolver?.fulfill()
    }
}

final class RefreshAPI: AbstractAPI, @unchecked Sendable {
    init(transport: TokenTransport) {
        super.init(configuration: APIConfiguration(baseURL: "http://127.0.0.1", timeout: .infinity, retryPolicy: .never), transport: transport,
                   responseQueue: .global())
    }
    func item() -> Promise<Void> { request(route: .get("/item")) }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal], warmupIterations: 2, maxDuration: .seconds(10), maxIterations: 50)

    for count in [1_000, 10_000] {
        Benchmark("Refresh: \(count) waiting requests re-sent after one refresh") { benchmark in
            let transport = TokenTransport(batch: count)
            let api = RefreshAPI(transport: transport)
            let delegate = HeldRefresh()
            api.delegate = delegate
            let promises = (0..<count).map { _ in api.item() }
            transport.wait(untilFinished: count)          // every request was refused and now waits
            benchmark.startMeasurement()
            transport.accept("new")
            delegate.release(with: "new")
            transport.wait(untilFinished: 2 * count)      // every one of them was sent again
            benchmark.stopMeasurement()
            for promise in promises { blackHole(try promise.wait(timeout: 60)) }
        }

        Benchmark("Refresh baseline: a plain loop sending \(count) requests") { benchmark in
            let transport = TokenTransport()
            transport.accept("new")
            let api = RefreshAPI(transport: transport)
            let delegate = HeldRefresh()
            delegate.release(with: "new")
            api.delegate = delegate
            benchmark.startMeasurement()
            let promises = (0..<count).map { _ in api.item() }
            transport.wait(untilFinished: count)
            benchmark.stopMeasurement()
            for promise in promises { blackHole(try promise.wait(timeout: 60)) }
        }
    }
}

extension Promise {
    /// Blocks until settled; the benchmark's own copy, so that it needs no test library.
    func wait(timeout: TimeInterval) throws -> Value {
        let done = DispatchSemaphore(value: 0)
        onResult(in: .global()) { _ in done.signal() }
        _ = done.wait(timeout: .now() + timeout)
        return try currentResult!.get()
    }
}
