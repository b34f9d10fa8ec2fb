import Foundation
import Testing
import Tern
import TernTesting

/// Replay with `RecordingOptions(matchesBody: true)`, whose documentation says a JSON body is
/// "compared as values when both are JSON (members in any order, any spacing)". `true` and `1`,
/// `false` and `0`, are different JSON values (a server that wants a boolean refuses the
/// number), but the bodies were read with `JSONSerialization` and compared as `NSNumber`s,
/// which Foundation finds equal: a request whose body says `{"enabled":true}` was answered
/// with the exchange recorded for `{"enabled":1}`, and a test of an app that regressed from
/// one to the other went on passing.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingJSONValueAttackTests {
    struct Flag<Value: Encodable & Sendable>: Encodable, Sendable { let enabled: Value }

    func echo() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/**", answers: .json(#"{"name": "recorded for a number", "price": 1}"#)))
        return stubs
    }

    @Test(arguments: [(1, true), (0, false)]) func aBooleanDoesNotMatchARecordedNumber(number: Int, flag: Bool) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let options = RecordingOptions(matchesBody: true)
        let recording = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .record, upstream: echo(), options: options))
        let _: Product = try await recording.request(route: recording.post(endpoint: "/flags"), parameters: JSONParameters(Flag(enabled: number))).value
        let replaying = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .replay, options: options))
        // The number recorded matches itself (the control)…
        let same: Product = try await replaying.request(route: replaying.post(endpoint: "/flags"), parameters: JSONParameters(Flag(enabled: number))).value
        #expect(same.name == "recorded for a number")
        // …and the boolean is another body: no recorded exchange answers it.
        let other = await (replaying.request(route: replaying.post(endpoint: "/flags"), parameters: JSONParameters(Flag(enabled: flag))) as Promise<Product>).result
        guard case .failure(APIError.transportFailed) = other else {
            Issue.record("{\"enabled\":\(flag)} was answered with the exchange recorded for {\"enabled\":\(number)}: \(other)")
            return
        }
    }
}
