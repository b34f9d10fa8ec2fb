import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineFixtures
import Tern

// Tern's JSONParser against JSONDecoder on payloads in the shape of real APIs (see PipelineFixtures'
// Models.swift and Payloads.swift), each pair measured in turns in one process; medians and their ratio.
//
//     swift run -c release JSONAB [rounds] [only cases whose name has this]
//     .build/release/JSONAB tern [rounds] [case]    # JSONParser alone, for a profiler

let ternAlone = CommandLine.arguments.dropFirst().first == "tern"
let arguments = CommandLine.arguments.dropFirst(ternAlone ? 2 : 1)
let rounds = arguments.first.flatMap { Int($0) } ?? 15
let only = arguments.dropFirst().first

/// One decoding case: how many documents a round decodes, and the two sides.
struct Case {
    let name: String
    let documents: Int
    let tern: () throws -> Void
    let foundation: () throws -> Void
}

/// A case decoding `body` as `Value`, with a decoder configured by `configure` on both sides.
func decoding<Value: Decodable & Sendable>(_ name: String, _ type: Value.Type, _ body: Data, documents: Int = 20,
                                           configure: (JSONDecoder) -> Void = { _ in }) -> Case {
    let decoder = JSONDecoder()
    configure(decoder)
    let ternDecoder = JSONDecoder()
    configure(ternDecoder)
    let parser = JSONParser(decoder: ternDecoder)
    let url = URL(string: "https://api.example.com/payload")!
    let response = Response(request: URLRequest(url: url), head: ResponseHead(url: url, statusCode: 200, httpVersion: nil,
                            headers: ["Content-Type": "application/json"])!, body: body)
    return Case(name: "\(name) (\(body.count / 1024) KB)", documents: documents,
                tern: { for _ in 0..<documents { _ = try parser.parse(Value.self, from: response) } },
                foundation: { for _ in 0..<documents { _ = try decoder.decode(Value.self, from: body) } })
}

let repositories = Payloads.repositories(count: 40)
let cases = [
    decoding("Repositories, every member", [Repository].self, repositories),
    decoding("Repositories, 12 members kept", [RepositorySummary].self, repositories),
    decoding("Repositories, convertFromSnakeCase", [CamelRepository].self, repositories) { $0.keyDecodingStrategy = .convertFromSnakeCase },
    decoding("Repositories, try? for optionals", [LenientSummary].self, repositories),
    decoding("Any JSON value, a try? chain", [JSONValue].self, Payloads.repositories(count: 12), documents: 60),
    decoding("Profile, 24 members", Profile.self, Payloads.profile(), documents: 2_000),
    decoding("Orders, 14 members", [Order].self, Payloads.orders(count: 50), documents: 200),
    decoding("The end-to-end benchmarks' 16 items", [Item].self, Fixtures.body, documents: 2_000),
    decoding("10,000 small objects", [Payloads.Small].self, Payloads.small(count: 10_000), documents: 2),
]

for decodingCase in cases where only == nil || decodingCase.name.contains(only!) {
    print("== \(decodingCase.name)")
    if ternAlone {
        let sample = try await Alternation.measure(decodingCase.documents * rounds) {
            for _ in 0..<rounds { try decodingCase.tern() }
        }
        print("JSONParser: \(Int(sample.cpu)) ns CPU per document")
        continue
    }
    try await Alternation.compare("JSONParser", against: "JSONDecoder", count: decodingCase.documents, rounds: rounds,
                                  { try decodingCase.tern() }, { try decodingCase.foundation() })
}
