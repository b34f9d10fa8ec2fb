import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The Recording and Replaying article's code and the README's paragraph, compiled (SnippetTests
// finds each block here), and run from a fixture by RecordingSnippetTests.
enum RecordingSnippets {
    typealias ShopAPI = Tour.ShopAPI

    static func overview(fixtures: URL) async throws -> [Tour.Product] {
        let tape = try RecordingTransport(file: fixtures.appendingPathComponent("products.har"))   // TERN_RECORDING=replay in CI
        let recordedShop = ShopAPI(client: APIClient(configuration: .production, transport: tape))
        let recorded = try await recordedShop.products(page: 1).value   // from the server once, from the file after
        return recorded
    }

    static func modes(fixtures: URL) throws -> [RecordingTransport] {
        let replayOnly = try RecordingTransport(file: fixtures.appendingPathComponent("products.har"), mode: .replay)   // never the network
        let rerecord = try RecordingTransport(file: fixtures.appendingPathComponent("products.har"), mode: .record, upstream: URLSessionTransport())
        return [replayOnly, rerecord]
    }

    static func matching(fixtures: URL) throws -> RecordingTransport {
        let options = RecordingOptions(matchedHeaders: ["Accept-Language"], matchesBody: true, secrets: ["api_key", "session_token"])
        let strict = try RecordingTransport(file: fixtures.appendingPathComponent("search.har"), options: options)
        return strict
    }

    static func secrets(fixtures: URL, apiKey: String) throws {
        let written = try String(contentsOf: fixtures.appendingPathComponent("products.har"), encoding: .utf8)
        #expect(!written.contains(apiKey))
    }

    static func pacing(fixtures: URL) throws -> TestClock {
        let clock = TestClock()
        let pacedTape = try RecordingTransport(file: fixtures.appendingPathComponent("completions.har"), mode: .replay, clock: clock)
        clock.advance(by: 1)   // the next event, recorded a second after the one before, comes now
        _ = pacedTape
        return clock
    }
}
