import Benchmark
import Dispatch
import Tern

// Each Tern benchmark has its baseline beside it; compare them as ratios, not as times.
// The README's benchmark table lists the ratios, each from one run.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 50,
        maxDuration: .seconds(3),
        maxIterations: 100_000
    )

    let queue = DispatchQueue(label: "tern.benchmark.delivery")
    let chainLength = 10

    // MARK: A chain of 10 maps, resolved from another thread, delivered on one serial queue.
    // Each sample runs 1,000 chains in flight and is reported per chain (scaling factor), so the
    // figure is the work per chain rather than the latency of waking a sleeping thread.

    let perChain = Benchmark.Configuration(scalingFactor: .kilo)

    // Ten more steps: (allocations of 20 − allocations of 10) / 10 is the cost of one step.
    for length in [chainLength, 2 * chainLength] {
        Benchmark("Chain of \(length) maps: Tern", configuration: perChain) { benchmark in
            let done = DispatchGroup()
            for _ in benchmark.scaledIterations {
                let (source, resolver) = Promise<Int>.pending(in: queue)
                var tail = source
                for _ in 0..<length { tail = tail.map { $0 + 1 } }
                done.enter()
                tail.onSuccess { blackHole($0); done.leave() }
                resolver.fulfill(0)
            }
            done.wait()
        }
    }

    // Side effects return a promise that settles after their body has run, so that the chain
    // runs in the order written; they must cost what a map costs. The naive floor's side effect
    // is a map that hands its value on.
    Benchmark("Chain of 10 side effects: Tern", configuration: perChain) { benchmark in
        let done = DispatchGroup()
        for _ in benchmark.scaledIterations {
            let (source, resolver) = Promise<Int>.pending(in: queue)
            var tail = source
            for _ in 0..<chainLength { tail = tail.onSuccess { blackHole($0) } }
            done.enter()
            tail.onSuccess { blackHole($0); done.leave() }
            resolver.fulfill(0)
        }
        done.wait()
    }

    Benchmark("Chain of 10 maps: naive floor, a hop per step", configuration: perChain) { benchmark in
        let done = DispatchGroup()
        for _ in benchmark.scaledIterations {
            let source = NaivePromise<Int>(queue: queue)
            var tail = source
            for _ in 0..<chainLength { tail = tail.map { $0 + 1 } }
            done.enter()
            tail.onSuccess { blackHole($0); done.leave() }
            source.fulfill(0)
        }
        done.wait()
    }

    Benchmark("Chain of 10 maps: naive floor, inline (not Zalgo-safe)", configuration: perChain) { benchmark in
        let done = DispatchGroup()
        for _ in benchmark.scaledIterations {
            let source = InlineNaivePromise<Int>()
            var tail = source
            for _ in 0..<chainLength { tail = tail.map { $0 + 1 } }
            done.enter()
            tail.onSuccess { blackHole($0); done.leave() }
            queue.async { source.fulfill(0) }
        }
        done.wait()
    }

    // MARK: The async bridge: a promise resolved from another thread, awaited; per await.

    Benchmark("Async bridge: Tern await promise.value", configuration: perChain) { benchmark in
        for _ in benchmark.scaledIterations {
            let (promise, resolver) = Promise<Int>.pending(in: queue)
            DispatchQueue.global().async { resolver.fulfill(1) }
            blackHole(try await promise.value)
        }
    }

    Benchmark("Async bridge: bare withCheckedContinuation", configuration: perChain) { benchmark in
        for _ in benchmark.scaledIterations {
            let value = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: 1) }
            }
            blackHole(value)
        }
    }

    Benchmark("Async bridge: minimal hand-written future", configuration: perChain) { benchmark in
        for _ in benchmark.scaledIterations {
            let future = MinimalFuture()
            DispatchQueue.global().async { future.fulfill(1) }
            blackHole(await future.result)
        }
    }

    // The same future once it honours Task cancellation as `value` must: the floor for Tern,
    // whose `await promise.value` must take no longer than this in the same run.
    Benchmark("Async bridge: minimal future with a cancellation handler", configuration: perChain) { benchmark in
        for _ in benchmark.scaledIterations {
            let future = MinimalFuture()
            DispatchQueue.global().async { future.fulfill(1) }
            blackHole(await withTaskCancellationHandler { await future.result } onCancel: {})
        }
    }

    // MARK: Promise.all over settled promises: the cost must grow linearly with the count.

    for count in [1_000, 10_000] {
        Benchmark("Promise.all over \(count) settled promises", configuration: .init(maxIterations: 2_000)) { benchmark in
            let promises = (0..<count).map { Promise(value: $0, in: queue) }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try await Promise.all(promises, in: queue).value)
            }
            benchmark.stopMeasurement()
        }
    }
}
