import Foundation
import Testing
import Tern
import TernTesting

/// One URL answered per session, as a server whose answers say `Vary: Cookie` (Django adds it to
/// every answer that reads the session): recorded once signed out and once signed in, then
/// replayed in the other order. RecordingAndReplaying.md promises: "Of those recorded for one
/// URL, one recorded with the request's values of the headers its response's `Vary` names
/// (`Accept-Language`, say) answers first", and "On replay, `[redacted]` matches any value, so
/// a test replays with credentials of its own". A cookie is hidden as `sessionid=[redacted]`
/// (its name kept), which is not the placeholder itself, so it matches no value: neither
/// `RecordedExchange.agreesOnVary` nor the check of `RecordingOptions(matchedHeaders:)` takes
/// the signed-in exchange for a request sending a session of its own. The signed-in request is
/// answered with the signed-out page (silently, the wrong user's answer), and with `Cookie` among
/// the matched headers it is answered by nothing at all.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingCookieVaryAttackTests {
    /// The page for a request: whose session it carries.
    static func page(_ request: RecordedRequest) -> ServerResponse {
        let cookie = request.headers["Cookie"] ?? ""
        return .text(cookie.contains("sessionid=") ? "signed in" : "signed out", headers: ["Vary": "Cookie"])
    }

    @Test(arguments: [false, true]) func aSignedInAnswerReplaysToAnotherSession(matchingCookies: Bool) async throws {
        let server = try LoopbackServer { Self.page($0) }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let options = RecordingOptions(matchedHeaders: matchingCookies ? ["Cookie"] : [])
        let recording = try TestAPI(baseURL: server.baseURL,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let signedIn = RequestOptions(headers: ["Cookie": "sessionid=recorded-session-1234"])
        let recordedOut: String = try await recording.request(route: .get(server.baseURL + "/profile")).value
        let recordedIn: String = try await recording.request(route: .get(server.baseURL + "/profile"), options: signedIn).value
        #expect(recordedOut == "signed out" && recordedIn == "signed in")

        let replaying = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        let replayedIn: Result<String, any Error> = await replaying.request(route: .get(server.baseURL + "/profile"),
                                                                               options: RequestOptions(headers: ["Cookie": "sessionid=replayed-session-5678"])).result
        let replayedOut: Result<String, any Error> = await replaying.request(route: .get(server.baseURL + "/profile")).result
        #expect((try? replayedIn.get()) == "signed in", "a request signed in was answered \(replayedIn)")
        #expect((try? replayedOut.get()) == "signed out", "a request signed out was answered \(replayedOut)")
    }
}
