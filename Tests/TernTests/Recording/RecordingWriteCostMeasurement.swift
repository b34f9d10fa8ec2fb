import Foundation
import Testing
import Tern
import TernTesting

/// How long recording 300 exchanges of 16 KB bodies into one file takes, printed: run by hand
/// with `TERN_MEASURE_RECORDING=1 swift test --skip-build --filter RecordingWriteCostMeasurement`.
/// No timing is asserted.
@Suite(.onTestThreads, .enabled(if: ProcessInfo.processInfo.environment["TERN_MEASURE_RECORDING"] != nil))
struct RecordingWriteCostMeasurement {
    @Test func recordingThreeHundredExchangesOfSixteenKilobytes() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let body = #"{"text": ""# + String(repeating: "tern \"quoted\"\n", count: 16_000 / 15) + #""}"#
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(body)))
        let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<300 {
            let _: Data = try await api.request(route: api.get(endpoint: "/items/\(index)")).value
        }
        let took = clock.now - started
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        print("recorded 300 exchanges of \(body.utf8.count) bytes in \(took), file \(size) bytes")
        #expect(try recordedEntries(in: file).count == 300)
    }
}
