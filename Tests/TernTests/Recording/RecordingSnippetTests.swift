import Foundation
import Testing
import Tern
import TernTesting
@testable import TernSnippets

/// The article's code, run from a fixture: the README's shop replays its products page.
@Suite(.onTestThreads) struct RecordingSnippetTests {
    @Test func theArticlesCodeRuns() async throws {
        let fixtures = scratchRecording().deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: fixtures) }
        try Data(RecordingTransportTests.archive(entries: [
            RecordingTransportTests.entry("GET", "https://shop.example/api/v2/products?tags%5B%5D=a&page=1&tags%5B%5D=b",
                                          body: #"[{"id": 1, "name": "tern", "price": 3}]"#),
        ]).utf8).write(to: fixtures.appendingPathComponent("products.har").creatingDirectory())
        let products = try await RecordingSnippets.overview(fixtures: fixtures)
        #expect(products.map(\.name) == ["tern"])
        #expect(try RecordingSnippets.modes(fixtures: fixtures).map(\.mode) == [.replay, .record])
        _ = try RecordingSnippets.matching(fixtures: fixtures)
        try RecordingSnippets.secrets(fixtures: fixtures, apiKey: "key-\(UUID().uuidString)")
        #expect(try RecordingSnippets.pacing(fixtures: fixtures).now == 1)
    }
}
