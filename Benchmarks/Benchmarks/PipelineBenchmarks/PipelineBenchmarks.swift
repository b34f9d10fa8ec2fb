import Benchmark
import PipelineFixtures
import Tern
import TernTesting

// Tern's request pipeline against the same work written by hand, in the same run.
// Each sample runs 1,000 requests and is reported per request (scaling factor).

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 2,
        scalingFactor: .kilo,
        maxDuration: .seconds(10),
        maxIterations: 30
    )

    let delivery = DispatchQueue(label: "tern.benchmark.delivery")

    // MARK: Pipeline overhead: an instant in-memory transport, so only the pipeline costs.
    // More samples than the rest: the difference sought is smaller than this machine's noise.
    // `OverheadAB` (in Sources/) runs the same two workloads alternately in one process, and
    // under valgrind, for figures steadier than these.
    let overhead = Benchmark.Configuration(maxDuration: .seconds(10), maxIterations: 100)

    Benchmark("Overhead: Tern GET + decode 1 KB, instant transport", configuration: overhead) { benchmark in
        let api = ItemsAPI(baseURL: "http://127.0.0.1", transport: InstantTransport(), responseQueue: delivery)
        benchmark.startMeasurement()
        Overhead.tern(benchmark.scaledIterations.count, api: api) { blackHole($0) }
    }

    Benchmark("Overhead: by hand, same transport and hops", configuration: overhead) { benchmark in
        let pipeline = DispatchQueue(label: "tern.benchmark.pipeline", attributes: .concurrent)
        benchmark.startMeasurement()
        Overhead.byHand(benchmark.scaledIterations.count, pipeline: pipeline, delivery: delivery) { blackHole($0) }
    }

    // MARK: End to end, over loopback: Tern against raw URLSession and JSONDecoder.

    let server = try! LoopbackServer { _ in
        ServerResponse(headers: ["Content-Type": "application/json"], body: Fixtures.body)
    }
    let itemsURL = URL(string: server.baseURL + "/items")!

    Benchmark("End to end, sequential: Tern") { benchmark in
        let api = ItemsAPI(baseURL: server.baseURL, responseQueue: delivery)
        for _ in benchmark.scaledIterations {
            blackHole(try await api.items().value)
        }
    }

    Benchmark("End to end, sequential: raw URLSession") { benchmark in
        let session = URLSession(configuration: .default)
        defer { session.finishTasksAndInvalidate() }
        for _ in benchmark.scaledIterations {
            blackHole(try await fetchItems(session, itemsURL))
        }
    }

    Benchmark("End to end, 64 in flight: Tern") { benchmark in
        let api = ItemsAPI(baseURL: server.baseURL, responseQueue: delivery)
        try await inFlight(64, benchmark.scaledIterations.count) { try await api.items().value }
    }

    Benchmark("End to end, 64 in flight: raw URLSession") { benchmark in
        let session = URLSession(configuration: .default)
        defer { session.finishTasksAndInvalidate() }
        try await inFlight(64, benchmark.scaledIterations.count) { try await fetchItems(session, itemsURL) }
    }
}

/// Raw URLSession with a completion handler and JSONDecoder: the baseline.
func fetchItems(_ session: URLSession, _ url: URL) async throws -> [Item] {
    try await withCheckedThrowingContinuation { continuation in
        session.dataTask(with: url) { data, response, error in
            continuation.resume(with: Result {
                if let error { throw error }
                return try JSONDecoder().decode([Item].self, from: data ?? Data())
            })
        }.resume()
    }
}

/// Runs `count` requests with at most `width` in flight.
func inFlight(_ width: Int, _ count: Int, _ request: @escaping @Sendable () async throws -> [Item]) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            if index >= width { try await group.next() }
            group.addTask { blackHole(try await request()) }
        }
        try await group.waitForAll()
    }
}
