import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineFixtures
import TernTesting

// The end-to-end comparison, steadier than the benchmark on a shared machine: Tern and raw
// URLSession with JSONDecoder take turns in one process, against one loopback server, and the
// medians are compared.
//
//     swift run -c release EndToEndAB [in flight] [requests per round] [rounds]

let arguments = CommandLine.arguments.dropFirst()
let width = arguments.first.flatMap { Int($0) } ?? 1
let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 500
let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 20

let server = try LoopbackServer { _ in
    ServerResponse(headers: ["Content-Type": "application/json"], body: Fixtures.body)
}
let url = URL(string: server.baseURL + "/items")!
let api = ItemsAPI(baseURL: server.baseURL, responseQueue: DispatchQueue(label: "tern.e2e.delivery"))
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
