import Benchmark
import PipelineFixtures
import Tern
import TernTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    // MARK: Decoding alone: Tern's JSON parser (its tape on Linux) against plain JSONDecoder,
    // on the end-to-end body (16 items, 873 bytes) and on a body of 1,000 items (59 KB).

    let parser = JSONParser()
    let head = ResponseHead(url: Fixtures.url, statusCode: 200, httpVersion: nil, headers: ["Content-Type": "application/json"])!
    for (size, body) in [("873 B", Fixtures.body), ("59 KB", Fixtures.body(items: 1_000))] {
        let response = Response(request: URLRequest(url: Fixtures.url), head: head, body: body)
        Benchmark("Decoding \(size): Tern's JSONParser") { benchmark in
            for _ in benchmark.scaledIterations {
                let items = try parser.parse([Item].self, from: response)
                blackHole(items)
            }
        }

        Benchmark("Decoding \(size): plain JSONDecoder") { benchmark in
            let decoder = JSONDecoder()
            for _ in benchmark.scaledIterations { blackHole(try decoder.decode([Item].self, from: body)) }
        }
    }

    // MARK: End to end, over loopback: Tern against raw URLSession and JSONDecoder.

    let server = try! LoopbackServer { _ in
        ServerResponse(headers: ["Content-Type": "application/json"], body: Fixtures.body)
    }
    let itemsURL = URL(string: server.baseURL + "/items")!
    // One API and one session for all iterations, as an app keeps them: creating and
    // invalidating a session per iteration crashed FoundationNetworking on Linux now and then
    // (its session-teardown races).
    let sharedAPI = ItemsAPI(baseURL: server.baseURL, responseQueue: delivery)
    let sharedSession = URLSession(configuration: .default)

    Benchmark("End to end, sequential: Tern") { benchmark in
        try await EndToEnd.sequential(benchmark.scaledIterations.count) { try await EndToEnd.tern(sharedAPI) }
    }

    Benchmark("End to end, sequential: raw URLSession") { benchmark in
        try await EndToEnd.sequential(benchmark.scaledIterations.count) { try await EndToEnd.raw(sharedSession, itemsURL) }
    }

    Benchmark("End to end, 64 in flight: Tern") { benchmark in
        try await EndToEnd.inFlight(64, benchmark.scaledIterations.count) { try await EndToEnd.tern(sharedAPI) }
    }

    Benchmark("End to end, 64 in flight: raw URLSession") { benchmark in
        try await EndToEnd.inFlight(64, benchmark.scaledIterations.count) { try await EndToEnd.raw(sharedSession, itemsURL) }
    }
}
