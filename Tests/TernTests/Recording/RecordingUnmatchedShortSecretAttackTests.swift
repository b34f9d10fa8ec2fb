import Foundation
import Testing
import Tern
import TernTesting

/// The words of an ``UnmatchedRequest`` for a request whose named secrets are short (a test's
/// key `k3y`, a password `pw1`). RecordingAndReplaying.md promises: "A value shorter than six
/// characters is hidden only where it is named (searched for everywhere, `a-1` would hide every
/// `a-1` in every body) ... The words of an ``UnmatchedRequest``, and of a response too long to
/// record, hide the request's own the same way (a CI log keeps them)". The file hides such a
/// value where its name names it, whatever its length, as do the words of a response too long
/// to record (`Redactor.redacted`); the words of an unmatched request only replace the values
/// long enough to be searched for (`Redactor.values(hiddenIn:)`), so the request's target,
/// `?api_key=k3y`, and its body's snippet, `"password":"pw1"`, are told as sent, in the
/// error a CI log keeps.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingUnmatchedShortSecretAttackTests {
    @Test func anUnmatchedRequestsWordsHideItsShortNamedSecrets() async throws {
        let server = try LoopbackServer { _ in .json(#"{"ok": true}"#) }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let options = RecordingOptions(matchesBody: true, secrets: ["api_key"])
        // Recorded once: the file hides both values by their names.
        let recording = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let _: Data = try await recording.request(route: .post(server.baseURL + "/login?api_key=k3y"),
                                                   parameters: JSONParameters(["user": "ana", "password": "pw1"])).value
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains("k3y") && !written.contains("pw1"), "\(written)")

        // Replayed with another user: no exchange answers, and the words say why.
        let replaying = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        let promise: Promise<Data> = replaying.request(route: .post(server.baseURL + "/login?api_key=k3y"),
                                                        parameters: JSONParameters(["user": "bob", "password": "pw1"]))
        guard case .transportFailed(let failure)? = await apiError(of: promise), let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("not failed with an UnmatchedRequest")
            return
        }
        let words = unmatched.description
        #expect(!words.contains("k3y"), "the key is in the words: \(words)")
        #expect(!words.contains("pw1"), "the password is in the words: \(words)")
    }
}
