import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineFixtures
import Tern
import TernTesting

// The end-to-end comparison, steadier than the benchmark on a shared machine: Tern and raw
// URLSession with JSONDecoder take turns in one process, against one server, and the medians
// are compared. The server is nginx when `TERN_BENCH_URL` names one serving the fixture at
// `/items` (`Benchmarks/nginx/bench` does it all), else one in this process, which shares the
// cores and hides part of the client's cost.
//
//     swift run -c release EndToEndAB [in flight] [requests per round] [rounds]
//     swift run -c release EndToEndAB fixture > items         # the body nginx serves
//     swift run -c release EndToEndAB fixture repos > repos   # the wide one: 10 GitHub-style repositories

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "fixture" {
    FileHandle.standardOutput.write(arguments.dropFirst().first == "repos" ? Fixtures.repositories : Fixtures.body)
    exit(0)
}
let width = arguments.first.flatMap { Int($0) } ?? 1
let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 500
let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 20

let baseURL: String
var inProcess: LoopbackServer?
if let outside = ProcessInfo.processInfo.environment["TERN_BENCH_URL"] {
    baseURL = outside
} else {
    inProcess = try LoopbackServer { _ in
        ServerResponse(headers: ["Content-Type": "application/json"], body: Fixtures.body)
    }
    baseURL = inProcess!.baseURL
}
print("server: \(inProcess == nil ? "outside, " + baseURL : "in this process")")
let url = URL(string: baseURL + "/items")!
let api = ItemsAPI(baseURL: baseURL, transport: URLSessionTransport(), responseQueue: DispatchQueue(label: "tern.e2e.delivery"))
let session = URLSession(configuration: .default)

/// Runs one round of `count` requests, as wide as asked.
func round(_ request: @escaping @Sendable () async throws -> [Item]) async throws {
    if width == 1 {
        try await EndToEnd.sequential(count, request)
    } else {
        try await EndToEnd.inFlight(width, count, request)
    }
}

print(width == 1 ? "Sequential:" : "\(width) in flight:")
try await Alternation.compare("Tern", against: "raw URLSession", count: count, rounds: rounds,
                              { try await round { try await EndToEnd.tern(api) } },
                              { try await round { try await EndToEnd.raw(session, url) } })
