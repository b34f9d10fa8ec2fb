import Dispatch
import Foundation
import PipelineFixtures

// The pipeline-overhead comparison, steadier than the benchmark on a shared machine: Tern and
// the same work by hand take turns in one process, so that both see the same machine, and the
// medians are compared. Synchronous, so that valgrind can count its instructions too.
//
//     swift run -c release OverheadAB [requests per round] [rounds]    # alternate, print ratios
//     .build/release/OverheadAB tern|hand [requests] [rounds]          # one side only
//     valgrind --tool=callgrind .build/release/OverheadAB tern 2000    # its instructions

let arguments = CommandLine.arguments.dropFirst()
let delivery = DispatchQueue(label: "tern.overhead.delivery")
let pipeline = DispatchQueue(label: "tern.overhead.pipeline", attributes: .concurrent)
let api = ItemsAPI(baseURL: "http://127.0.0.1", transport: InstantTransport(), responseQueue: delivery)
let consume: @Sendable (Result<[Item], any Error>) -> Void = { _ = try? $0.get().count }

/// Runs `count` requests one way; returns wall and CPU nanoseconds per request.
func measure(_ side: String, _ count: Int) -> (wall: Double, cpu: Double) {
    let wallStart = DispatchTime.now().uptimeNanoseconds
    let cpuStart = clock()
    if side == "tern" {
        Overhead.tern(count, api: api, consume)
    } else {
        Overhead.byHand(count, pipeline: pipeline, delivery: delivery, consume)
    }
    let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart)
    let cpu = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC) * 1e9
    return (wall / Double(count), cpu / Double(count))
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

if let side = arguments.first, side == "tern" || side == "hand" {
    let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000
    let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1
    let results = (0..<rounds).map { _ in measure(side, count) }
    print("\(side): \(Int(median(results.map(\.wall)))) ns wall, \(Int(median(results.map(\.cpu)))) ns CPU per request (median of \(rounds) rounds of \(count))")
} else {
    let count = arguments.first.flatMap { Int($0) } ?? 1_000
    let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 30
    var tern: [(wall: Double, cpu: Double)] = []
    var hand: [(wall: Double, cpu: Double)] = []
    for round in 0..<rounds + 2 {
        // Alternate who goes first; the first two rounds warm up and are dropped.
        let pair = round.isMultiple(of: 2) ? (measure("tern", count), measure("hand", count)) : {
            let hand = measure("hand", count)
            return (measure("tern", count), hand)
        }()
        if round >= 2 { tern.append(pair.0); hand.append(pair.1) }
    }
    let ternWall = median(tern.map(\.wall)), handWall = median(hand.map(\.wall))
    let ternCPU = median(tern.map(\.cpu)), handCPU = median(hand.map(\.cpu))
    print("Tern:    \(Int(ternWall)) ns wall, \(Int(ternCPU)) ns CPU per request (median of \(rounds) rounds of \(count))")
    print("by hand: \(Int(handWall)) ns wall, \(Int(handCPU)) ns CPU per request")
    print(String(format: "ratio:   %.3f wall, %.3f CPU", ternWall / handWall, ternCPU / handCPU))
    // Each round against the one beside it: the spread shows how noisy the machine was.
    let pairs = zip(tern, hand).map { $0.cpu / $1.cpu }.sorted()
    print(String(format: "pair CPU ratios: p25 %.3f  p50 %.3f  p75 %.3f", pairs[pairs.count / 4], pairs[pairs.count / 2], pairs[3 * pairs.count / 4]))
}
