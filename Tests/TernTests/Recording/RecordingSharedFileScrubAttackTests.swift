import Foundation
import Testing
import Tern
import TernTesting

/// Two transports recording into one file at once (two tests side by side), one sending a
/// token as `Authorization`, the other recording an answer that lists the same token under a
/// name nobody made secret (an API's page of its keys). RecordingAndReplaying.md promises: "a
/// value once hidden is hidden wherever else it appears, in entries recorded before as well as
/// after", and "Transports recording into one file at once (tests running side by side) share
/// it". Each transport keeps the values it hid to itself (`Recording`'s `Redactor`); the file
/// scrubs the entries already in it of a value newly hidden, but an entry another transport
/// adds later is scrubbed of nothing: the token stays out of the file when the listing was
/// recorded first, and is written in clear when it was recorded after.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingSharedFileScrubAttackTests {
    @Test(arguments: [false, true])
    func aTokenHiddenByOneTransportIsHiddenInAnotherTransportsEntries(signedInFirst: Bool) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/me", answers: .json(#"{"name": "tern", "price": 1}"#)))
        stubs.add(Stub(.get, "/keys", answers: .json(#"[{"id": 1, "key": "\#(token)"}]"#)))
        let signingIn = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let listing = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        func signIn() async throws {
            let _: Product = try await signingIn.request(route: signingIn.get(endpoint: "/me"),
                                                         options: RequestOptions(headers: ["Authorization": "Bearer \(token)"])).value
        }
        func list() async throws { let _: Data = try await listing.request(route: listing.get(endpoint: "/keys")).value }
        if signedInFirst {
            try await signIn()
            try await list()
        } else {
            try await list()
            try await signIn()
        }
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(written.contains("/keys") && written.contains("/me"), "both exchanges are in the file")
        let lines = written.split(separator: "\n").filter { $0.contains(token) }
        #expect(lines.isEmpty, "the token is in the recording: \(lines)")
    }
}
