import Foundation
import Testing
import Tern
import TernTesting

/// Fifty requests to one URL at once, recorded from a server that answers each with a body of
/// its own (a counter), then replayed at once. RecordingAndReplaying.md: "The same request made
/// again is answered by the next exchange recorded for it", and a recording replays "offline,
/// exact": each recorded answer answers one request, none twice, none left out.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingParallelSameURLAttackTests {
    static let count = 50

    func counterServer() throws -> (LoopbackServer, Recorder<Int>) {
        let hits = Recorder<Int>()
        let server = try LoopbackServer { request in
            let number = hits.appendCounting(0)
            return .json(#"{"name": "n\#(number)", "price": \#(number)}"#)
        }
        return (server, hits)
    }

    func all(_ api: TestAPI, _ make: @escaping @Sendable (TestAPI, Int) -> Promise<Product>) async -> [Result<Product, any Error>] {
        await withTaskGroup(of: Result<Product, any Error>.self) { group in
            for index in 0..<Self.count {
                group.addTask { await make(api, index).result }
            }
            var results: [Result<Product, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
    }

    @Test func parallelGetsOfOneURLReplayEachRecordedAnswerOnce() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (server, _) = try counterServer()
        let baseURL = server.baseURL
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded = await all(recording) { api, _ in api.request(route: api.get(endpoint: "/counter")) }
        server.stop()
        let recordedPrices = recorded.compactMap { try? $0.get().price }.sorted()
        #expect(recordedPrices == Array(1...Self.count))
        #expect(try recordedEntries(in: file).count == Self.count)

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayed = await all(replaying) { api, _ in api.request(route: api.get(endpoint: "/counter")) }
        let replayedPrices = replayed.compactMap { try? $0.get().price }.sorted()
        #expect(replayedPrices == recordedPrices, "replayed \(replayedPrices)")
    }

    struct Order: Codable, Sendable { let item: Int }

    @Test func parallelPostsWithTheirOwnBodiesReplayTheirOwnAnswers() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { request in
            let order = try? JSONDecoder().decode(Order.self, from: request.body)
            return .json(#"{"name": "order", "price": \#(order?.item ?? -1)}"#)
        }
        let baseURL = server.baseURL
        let options = RecordingOptions(matchesBody: true)
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let post: @Sendable (TestAPI, Int) -> Promise<Product> = { api, index in
            api.request(route: api.post(endpoint: "/orders"), parameters: JSONParameters(Order(item: index)))
        }
        let recorded = await all(recording, post)
        server.stop()
        #expect(recorded.compactMap { try? $0.get().price }.sorted() == Array(0..<Self.count))
        #expect(try recordedEntries(in: file).count == Self.count)

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        // Each request knows its own answer: the one whose body it sent.
        let replayed = await withTaskGroup(of: (Int, Result<Product, any Error>).self) { group in
            for index in 0..<Self.count { group.addTask { (index, await post(replaying, index).result) } }
            var results: [(Int, Result<Product, any Error>)] = []
            for await result in group { results.append(result) }
            return results
        }
        let wrong = replayed.filter { (try? $0.1.get().price) != $0.0 }.map { "\($0.0): \($0.1)" }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}
