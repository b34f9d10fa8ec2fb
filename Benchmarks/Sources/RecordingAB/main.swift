import Foundation
import PipelineFixtures
import Tern
import TernTesting

// Issue 59's figure: replaying recorded exchanges from an HTTP Archive against answering the
// same requests from stubs, through the whole pipeline (build, sign, send, validate, decode).
// The sides take turns in one process; each round sends every request once, sequentially.
//
//     swift run -c release RecordingAB [exchanges] [rounds]
//
// "one stub" answers every path from a closure, the cheapest stubs can be. "A stub a path", the
// way a test would write them, is measured apart on fewer (the third argument, 1,000 by
// default): StubTransport tries its stubs in turn and describes each that does not match, so
// its cost grows with their number squared. The recording is loaded once, before the rounds;
// its load is timed on its own.
//
//     swift run -c release RecordingAB [exchanges] [rounds] [stubs a path]

struct Item: Decodable, Sendable { let id: Int; let name: String }

let arguments = CommandLine.arguments.dropFirst()
let count = arguments.first.flatMap { Int($0) } ?? 10_000
let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 3
let perPath = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1_000
let base = "https://bench.example"
let body = { (id: Int) in #"{"id": \#(id), "name": "item \#(id)"}"# }

// The recording: one exchange a path, as RecordingTransport writes them.
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-recording-ab-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let file = directory.appendingPathComponent("bench.har")
let entries = (0..<count).map { id in
    #"""
    {"startedDateTime": "2026-11-29T09:00:00.000Z", "time": 1, "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0},
     "request": {"method": "GET", "url": "\#(base)/items/\#(id)", "httpVersion": "HTTP/1.1", "headers": [{"name": "Accept", "value": "application/json"}],
                 "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [{"name": "Content-Type", "value": "application/json"}],
                  "cookies": [], "content": {"size": 30, "mimeType": "application/json", "text": \#(String(decoding: try! JSONEncoder().encode(body(id)), as: UTF8.self))},
                  "redirectURL": "", "headersSize": -1, "bodySize": -1}}
    """#
}
try Data((#"{"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"}, "entries": ["# + entries.joined(separator: ",\n") + "]}}").utf8).write(to: file)
print("recording: \(count) exchanges, \(try Data(contentsOf: file).count / 1024) KiB")

let loadStart = DispatchTime.now().uptimeNanoseconds
let tape = try RecordingTransport(file: file, mode: .replay)
print(String(format: "loading it: %.3f s", Double(DispatchTime.now().uptimeNanoseconds - loadStart) / 1e9))

let manyStubs = StubTransport()
for id in 0..<perPath { manyStubs.add(Stub(.get, "/items/\(id)", answers: .json(body(id)))) }
let oneStub = StubTransport()
oneStub.add(Stub(.get, "/items/*") { request in .json(body(Int(request.path.split(separator: "/").last ?? "") ?? 0)) })

let queue = DispatchQueue(label: "tern.recording-ab.delivery")
func client(_ transport: any Transport) -> APIClient {
    APIClient(configuration: APIConfiguration(baseURL: base, retryPolicy: .never), transport: transport, responseQueue: queue)
}
let sides: [(name: String, client: APIClient, count: Int)] = [
    ("replay", client(tape), count), ("one stub", client(oneStub), count), ("a stub a path (\(perPath))", client(manyStubs), perPath),
]

var seconds = Array(repeating: [Double](), count: sides.count)
for round in 0..<rounds + 1 {
    for offset in sides.indices {
        let index = (round + offset) % sides.count
        let (_, api, requests) = sides[index]
        let sample = try await Alternation.measure(requests) {
            for id in 0..<requests {
                let item: Item = try await api.request(route: .get("/items/\(id)")).value
                precondition(item.id == id)
            }
        }
        if round > 0 { seconds[index].append(sample.wall * Double(requests) / 1e9) }   // the first round warms up
    }
}
for (index, side) in sides.enumerated() {
    let sorted = seconds[index].sorted()
    print(String(format: "%@: %.3f s for %d requests (median of %d rounds; %.1f µs each)",
                 side.name, sorted[sorted.count / 2], side.count, rounds, sorted[sorted.count / 2] / Double(side.count) * 1e6))
}
