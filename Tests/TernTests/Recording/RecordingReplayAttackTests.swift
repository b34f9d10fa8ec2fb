import Foundation
import Testing
import Tern
import TernTesting

/// Replay where it meets the pipeline's features, and secrets where Tern's own encoders put
/// them: a nested form or query field (`user[password]`), a large download cancelled while its
/// replay is paced on a clock.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingReplayAttackTests {
    let baseURL = "https://shop.example"
    static let password = "hunter2-correct-horse"
    static let token = "tok-8f1c2d7e9a"

    func echo() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 4}"#)))
        return stubs
    }

    /// A form and a query whose secret is nested, as Tern writes a dictionary in a form
    /// (`user[password]=...`) and as Rails and PHP read it: hidden, as a JSON member at any
    /// depth is, and replayed to a request with other credentials.
    @Test func aSecretNestedInAFormOrAQueryIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let options = RecordingOptions(matchesBody: true, secrets: ["password", "token"])
        let form = { (password: String) in FormParameters(["user": ["name": "ann", "password": password]]) }
        let query = { (token: String) in URLParameters(["auth": ["token": token], "page": 1]) }
        let recording = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .record, upstream: echo(), options: options))
        let posted: Product = try await recording.request(route: recording.post(endpoint: "/login"), parameters: form(Self.password)).value
        let got: Product = try await recording.request(route: recording.get(endpoint: "/orders"), parameters: query(Self.token)).value
        let written = try String(contentsOf: file, encoding: .utf8)
        for secret in [Self.password, Self.token] {
            #expect(!written.contains(secret) && !written.contains(secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret),
                    "\(secret) is in the file: \(written)")
        }
        let replaying = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .replay, options: options))
        #expect(try await replaying.request(route: replaying.post(endpoint: "/login"), parameters: form("another-password")).value == posted)
        #expect(try await replaying.request(route: replaying.get(endpoint: "/orders"), parameters: query("another-token-1")).value == got)
    }

    /// A large download replayed on a test clock, its rest recorded a minute after its first
    /// megabyte, cancelled wherever the cancel lands before the clock moves: it settles once,
    /// cancelled, leaves no file, and the clock moved after starts nothing more.
    @Test func aPacedDownloadCancelledMidReplaySettlesOnceCancelledAndLeavesNoFile() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let size = 4 << 20
        let body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) })
        let entry = RecordingTransportTests.entry("GET", baseURL + "/big.bin", body: "")
            .replacingOccurrences(of: #""mimeType": "application/json", "text": """#,
                                  with: #""mimeType": "application/octet-stream", "encoding": "base64", "text": "\#(body.base64EncodedString())""#)
            .replacingOccurrences(of: #""size": 0,"#, with: #""size": \#(size),"#)
            .replacingOccurrences(of: #""cache": {}"#, with: #""cache": {}, "_chunks": [{"after": 0, "size": 1048576}, {"after": 60, "size": \#(size - (1 << 20))}]"#)
        try Data(RecordingTransportTests.archive(entries: [entry]).utf8).write(to: file.creatingDirectory())
        let clock = TestClock()
        let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(timeout: 600, retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .replay, clock: clock))
        // Whole, once the clock moves: the file replays.
        let whole = api.download(route: api.get(endpoint: "/big.bin"), to: folder.appendingPathComponent("whole.bin"))
        #expect(await clock.advanceToNextDelivery())
        #expect(try Data(contentsOf: await whole.value.fileURL) == body)
        for round in 0..<20 {
            let destination = folder.appendingPathComponent("\(round).bin")
            let download = api.download(route: api.get(endpoint: "/big.bin"), to: destination)
            if round % 2 == 1 { await Task.yield() }
            if round % 4 == 3 { _ = await clock.waitForScheduled(1, timeout: 5) }
            download.cancel()
            let outcome = await download.result
            clock.advance(by: 120)
            guard case .failure(APIError.cancelled) = outcome else {
                Issue.record("round \(round): \(outcome)")
                continue
            }
            #expect(!FileManager.default.fileExists(atPath: destination.path), "round \(round) left a file")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["session.har", "whole.bin"])
    }

    /// Pins on replay: an answer from the file reaches no server and passes every pin, as a
    /// stub's does, the pins of the host a recorded redirect leads to too (the pins were checked
    /// when it was recorded, by the transport that reached the server). Recording what is missing
    /// through a transport that cannot pin (URLSession with FoundationNetworking) refuses a pinned
    /// request, typed, even one the file would answer: the recorder cannot know, before the
    /// pipeline asks, which requests the file answers.
    @Test func pinsPassOnReplayAndAnUpstreamThatCannotPinRefusesThemTyped() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/go", answers: .status(302, headers: ["Location": "https://cdn.example/file"])))
        stubs.add(Stub(.get, "/file", answers: .json(#"{"name": "tern", "price": 7}"#)))
        let wrongPin = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
        func api(_ transport: RecordingTransport) throws -> AbstractAPI {
            var configuration = APIConfiguration(retryPolicy: .never)
            configuration.certificatePins = try CertificatePins(["shop.example": [wrongPin], "cdn.example": [wrongPin]])
            return AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
        }
        let recorded: Product = try await api(RecordingTransport(file: file, mode: .record, upstream: stubs)).request(route: .get(baseURL + "/go")).value
        #expect(recorded.price == 7)
        #expect(try await api(RecordingTransport(file: file, mode: .replay)).request(route: .get(baseURL + "/go")).value == recorded)
        #if canImport(FoundationNetworking)
        let missing = await (try api(RecordingTransport(file: file, mode: .missing, upstream: URLSessionTransport()))
            .request(route: .get(baseURL + "/go")) as Promise<Product>).result
        guard case .failure(APIError.pinningFailed(let failure)) = missing else {
            Issue.record("expected pinningFailed, got \(missing)")
            return
        }
        #expect(failure.reason == .transportCannotPin)
        #endif
    }

    /// A request the recording does not answer fails with an ``UnmatchedRequest`` whose words
    /// name it and how it differs from the nearest exchanges: words a CI log keeps, where the
    /// request's own credentials (a live token, in `.missing` mode with the server down) have
    /// no place. Hidden there as in the file: the secret query item, form field, header, and
    /// `Authorization`. (The query's token and the form's password were there.)
    @Test func anUnansweredRequestsWordsHideItsSecrets() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let options = RecordingOptions(matchedHeaders: ["X-Api-Key"], matchesBody: true, secrets: ["token", "password", "X-Api-Key"])
        let recording = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .record, upstream: echo(), options: options))
        let headers: HTTPHeaders = ["Authorization": "Bearer recorded-bearer-1", "X-Api-Key": "recorded-key-1"]
        let _: Product = try await recording.request(route: recording.get(endpoint: "/orders"), parameters: URLParameters(["token": "recorded-token-1"]),
                                                     options: RequestOptions(headers: headers)).value
        let _: Product = try await recording.request(route: recording.post(endpoint: "/login"),
                                                     parameters: FormParameters(["user": "ann", "password": "recorded-password-1"]),
                                                     options: RequestOptions(headers: headers)).value
        let live = ["live-token-7f3a9c", "live-password-7f3a9c", "live-bearer-7f3a9c", "live-key-7f3a9c"]
        let liveHeaders: HTTPHeaders = ["Authorization": "Bearer " + live[2], "X-Api-Key": live[3]]
        let replaying = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .replay, options: options))
        var words: [String] = []
        for promise: Promise<Product> in [
            replaying.request(route: replaying.get(endpoint: "/orders"), parameters: URLParameters(["token": live[0], "page": 2]),
                              options: RequestOptions(headers: liveHeaders)),
            replaying.request(route: replaying.post(endpoint: "/login"), parameters: FormParameters(["user": "bob", "password": live[1]]),
                              options: RequestOptions(headers: liveHeaders)),
        ] {
            guard case .transportFailed(let failure)? = await apiError(of: promise), let unmatched = failure.underlying as? UnmatchedRequest else {
                Issue.record("not failed with an UnmatchedRequest")
                continue
            }
            words.append(unmatched.description)
        }
        #expect(words.count == 2)
        for (secret, text) in live.flatMap({ secret in words.map { (secret, $0) } }) {
            #expect(!text.contains(secret), "\(secret) in: \(text)")
        }
    }
}
