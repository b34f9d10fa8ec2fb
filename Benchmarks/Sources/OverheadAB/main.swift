import Dispatch
import PipelineFixtures

// The pipeline-overhead comparison, steadier than the benchmark on a shared machine: Tern and
// the same work by hand take turns in one process, so that both see the same machine, and the
// medians are compared. Synchronous workloads, so that valgrind can count instructions too.
//
//     swift run -c release OverheadAB [requests per round] [rounds]    # alternate, print ratios
//     .build/release/OverheadAB tern|hand [requests] [rounds]          # one side only
//     valgrind --tool=callgrind .build/release/OverheadAB tern 2000    # its instructions
//     .build/release/OverheadAB metrics [requests] [rounds]            # metrics reported vs none
//     .build/release/OverheadAB bytes [requests] [rounds]              # the body as bytes, from a task,
//                                                                      # vs a promise over the transport alone

let arguments = CommandLine.arguments.dropFirst()
let delivery = DispatchQueue(label: "tern.overhead.delivery")
let pipeline = DispatchQueue(label: "tern.overhead.pipeline", attributes: .concurrent)
let api = ItemsAPI(baseURL: "http://127.0.0.1", transport: InstantTransport(), responseQueue: delivery)
let consume: @Sendable (Result<[Item], any Error>) -> Void = { _ = try? $0.get().count }

func tern(_ count: Int) { Overhead.tern(count, api: api, consume) }
func byHand(_ count: Int) { Overhead.byHand(count, pipeline: pipeline, delivery: delivery, consume) }

if arguments.first == "bytes" {
    // The pipeline's own cost per request, with no network under it: Tern's body as bytes
    // awaited from a task, against a promise the transport's answer settles directly.
    let measured = ItemsAPI(baseURL: "http://127.0.0.1", transport: MeasuringInstantTransport(), responseQueue: delivery)
    let transport = MeasuringInstantTransport()
    let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000
    let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 30
    await Alternation.compare("Tern, bytes", against: "a promise over the transport alone", count: count, rounds: rounds, {
        for _ in 0..<count { _ = try? await measured.bytes().value }
    }, {
        for _ in 0..<count { _ = try? await Overhead.promised("http://127.0.0.1/items", over: transport, delivery: delivery).value }
    })
} else if arguments.first == "metrics" {
    // The transport reports each exchange's metrics, as CurlTransport does; nobody reads them.
    let measured = ItemsAPI(baseURL: "http://127.0.0.1", transport: MeasuringInstantTransport(), responseQueue: delivery)
    let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000
    let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 30
    await Alternation.compare("Tern, metrics reported", against: "Tern, no metrics", count: count, rounds: rounds,
                              { Overhead.tern(count, api: measured, consume) }, { tern(count) })
} else if let side = arguments.first, side == "tern" || side == "hand" {
    let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000
    let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1
    var samples: [Alternation.Sample] = []
    for _ in 0..<rounds {
        samples.append(await Alternation.measure(count) { side == "tern" ? tern(count) : byHand(count) })
    }
    print("\(side): \(Int(Alternation.median(samples.map(\.wall)))) ns wall, \(Int(Alternation.median(samples.map(\.cpu)))) ns CPU per request (median of \(rounds) rounds of \(count))")
} else {
    let count = arguments.first.flatMap { Int($0) } ?? 1_000
    let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 30
    await Alternation.compare("Tern", against: "by hand", count: count, rounds: rounds, { tern(count) }, { byHand(count) })
}
