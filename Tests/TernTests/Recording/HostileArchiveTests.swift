import Foundation
import Testing
import Tern
import TernTesting

/// Archives a careless hand, a crash or an attacker wrote: each is an error when the transport
/// is made, or a typed error when the request is answered; never a crash, a hang or a wrong
/// body given as the recorded one.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HostileArchiveTests {
    /// An entry whose response is `response` (the JSON of HAR's `response` object) and which
    /// carries `extra` members (`"_chunks": [...]`, say).
    static func entry(response: String, extra: String = "") -> String {
        #"""
        {"request": {"method": "GET", "url": "https://shop.example/p", "headers": []}, "response": \#(response)\#(extra)}
        """#
    }

    static func response(status: String = "200", content: String) -> String {
        #"{"status": \#(status), "headers": [{"name": "Content-Type", "value": "application/octet-stream"}], "content": \#(content)}"#
    }

    /// Makes a replaying transport for `text` and asks it for `/p`: the error making it, or the
    /// request's error, or the body it answered.
    func replay(_ text: String) async -> Result<Data, any Error> {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        do {
            try Data(text.utf8).write(to: file.creatingDirectory())
            let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                                  transport: RecordingTransport(file: file, mode: .replay))
            let data: Data = try await api.request(route: api.get(endpoint: "/p")).value
            return .success(data)
        } catch {
            return .failure(error)
        }
    }

    static let body = Data("a tern".utf8).base64EncodedString()

    @Test(arguments: [
        // A chunk of negative size, or one that comes before the one before.
        entry(response: response(content: #"{"text": "\#(body)", "encoding": "base64"}"#), extra: #", "_open": true, "_chunks": [{"after": 0, "size": -5}]"#),
        entry(response: response(content: #"{"text": "\#(body)", "encoding": "base64"}"#), extra: #", "_chunks": [{"after": 0, "size": 2}, {"after": -3, "size": 4}]"#),
        // Base64 that is none, and an encoding nobody knows.
        entry(response: response(content: #"{"text": "not*base64!", "encoding": "base64"}"#)),
        entry(response: response(content: #"{"text": "a tern", "encoding": "rot13"}"#)),
        // Statuses no response has.
        entry(response: response(status: "-200", content: #"{"text": "x"}"#)),
        entry(response: response(status: "99999999999", content: #"{"text": "x"}"#)),
    ])
    func aHostileEntryIsAnErrorNotACrashNorAWrongBody(_ entry: String) async {
        let result = await replay(RecordingTransportTests.archive(entries: [entry]))
        guard case .failure(let error) = result else {
            Issue.record("answered \(String(describing: try? result.get())) from \(entry)")
            return
        }
        #expect(!"\(error)".isEmpty)
    }

    /// Header fields no server could send (no name, a line break in a value, a name with a colon
    /// or a space, a thousand repeats): replayed to the app as values, or a typed error, and the
    /// response read whole; never a crash.
    @Test func hostileHeaderFieldsAreNoCrash() async throws {
        let fields = [("", "empty"), ("X-Split", "a\r\nSet-Cookie: planted=1"), ("X:Colon", "1"), ("X Space", "1"), ("Content-Type", "text/plain\u{0}")]
            + (0..<1000).map { ("X-Many", "\($0)") }
        let headers = fields.map { #"{"name": \#(Self.encoded($0.0)), "value": \#(Self.encoded($0.1))}"# }.joined(separator: ", ")
        let entry = Self.entry(response: #"{"status": 200, "headers": [\#(headers)], "content": {"text": "a tern"}}"#)
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(RecordingTransportTests.archive(entries: [entry]).utf8).write(to: file.creatingDirectory())
        let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never), transport: RecordingTransport(file: file, mode: .replay))
        switch await (api.request(route: api.get(endpoint: "/p")) as Promise<Response>).result {
        case .success(let response):
            #expect(String(decoding: response.body, as: UTF8.self) == "a tern")
            _ = response.headers["X-Split"]
            #expect(response.head.setCookies == nil || response.head.setCookies?.contains { $0.contains("planted") } == false)
        case .failure(let error):
            #expect(error is APIError)
        }
    }

    static func encoded(_ text: String) -> String { String(decoding: try! JSONEncoder().encode(text), as: UTF8.self) }

    /// Wrong types, a cut file, a nesting a recursive reader would overflow on: errors.
    @Test func aCorruptArchiveIsAnError() async {
        let valid = RecordingTransportTests.archive(entries: [RecordingTransportTests.entry("GET", "https://shop.example/p", body: "{}")])
        let deep = String(repeating: #"{"a": ["#, count: 200_000) + String(repeating: "]}", count: 200_000)
        for text in [
            String(valid.prefix(valid.count / 2)),
            valid.replacingOccurrences(of: #""status": 200"#, with: #""status": "200""#),
            valid.replacingOccurrences(of: #""entries": ["#, with: #""entries": {"#),
            #"{"log": {"entries": [\#(deep)]}}"#,
            #"{"log": {"pages": [\#(deep)], "entries": []}}"#,
            "",
            "\u{0}\u{1}garbage",
        ] {
            let result = await replay(text)
            #expect(throws: (any Error).self, "\(text.prefix(60))") { try result.get() }
        }
    }

    /// A nesting in a member replay skips (a browser's `_initiator` with its chain of parent
    /// stacks, its `pages`): read past, the entry replays. (Nested past 512, the file is an
    /// error, as ``aCorruptArchiveIsAnError()`` shows: `JSONDecoder`'s limit.)
    @Test func aNestingInASkippedMemberIsReadPast() async throws {
        let deep = String(repeating: #"{"a": ["#, count: 200) + String(repeating: "]}", count: 200)
        let entry = RecordingTransportTests.entry("GET", "https://shop.example/p", body: #"{"ok": 1}"#)
            .replacingOccurrences(of: #""cache": {}"#, with: #""cache": {}, "_initiator": \#(deep)"#)
        let text = #"{"log": {"pages": [\#(deep)], "entries": [\#(entry)]}}"#
        let data = try await replay(text).get()
        #expect(String(decoding: data, as: UTF8.self) == #"{"ok": 1}"#)
    }

    /// The same exchange recorded twice, or a thousand times: answered in order, then the last.
    @Test func duplicateEntriesAnswerInTurn() async throws {
        let entries = (0..<1000).map { RecordingTransportTests.entry("GET", "https://shop.example/p", body: #"{"n": \#($0 % 2)}"#) }
        let data = try await replay(RecordingTransportTests.archive(entries: entries)).get()
        #expect(String(decoding: data, as: UTF8.self) == #"{"n": 0}"#)
    }
}
