import Foundation
import Testing
import Tern
@testable import TernTesting

/// A scratch file for a recording, in a directory of its own.
func scratchRecording(_ name: String = "session.har") -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("tern-har-\(UUID().uuidString)").appendingPathComponent(name)
}

/// The entries of a recording's file, as JSON objects.
func recordedEntries(in file: URL) throws -> [[String: Any]] {
    let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
    return (json?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
}

/// The recording transport under the real pipeline: recorded from a loopback server, replayed
/// with it stopped; matching, order, the error for an unmatched request, the file's shape.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingTransportTests {
    func api(_ transport: RecordingTransport, baseURL: String, configuration: APIConfiguration = APIConfiguration(retryPolicy: .never)) throws -> TestAPI {
        try TestAPI(baseURL: baseURL, configuration: configuration, transport: transport)
    }

    @Test func aRecordedExchangeReplaysWithTheServerGone() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { request in
            request.path == "/products" ? .json(#"[{"name": "tern", "price": 3}]"#) : ServerResponse(status: 404)
        }
        let baseURL = server.baseURL
        let recorder = try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make())
        let recording = try api(recorder, baseURL: baseURL)
        let recorded: [Product] = try await recording.request(route: recording.get(endpoint: "/products"), parameters: URLParameters(["page": 1, "size": 20])).value
        server.stop()

        let replayer = try RecordingTransport(file: file, mode: .replay)
        let replaying = try api(replayer, baseURL: baseURL)
        // The query in another order matches.
        let replayed: [Product] = try await replaying.request(route: replaying.get(endpoint: "/products?size=20&page=1")).value
        #expect(recorded == [Product(name: "tern", price: 3)])
        #expect(replayed == recorded)
    }

    @Test func anUnmatchedRequestFailsNamingItAndTheNearestRecorded() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.archive(entries: [
            Self.entry("GET", "https://shop.example/products?page=1", body: "[]"),
            Self.entry("POST", "https://shop.example/products", body: "{}"),
            Self.entry("GET", "https://shop.example/orders/7", body: "{}"),
        ]).utf8).write(to: file.creatingDirectory())
        let api = try api(RecordingTransport(file: file, mode: .replay), baseURL: "https://shop.example")
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 2])) as Promise<Data>)
        guard case .transportFailed(let failure)? = error, let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("expected an unmatched request, got \(String(describing: error))")
            return
        }
        #expect(unmatched.request.target == "/products?page=2")
        #expect(unmatched.mismatches.first?.stub == "GET https://shop.example/products?page=1 (200)")
        #expect(unmatched.mismatches.first?.reason == "query item page is 2, not 1")
        #expect(unmatched.mismatches.map(\.stub).last == "GET https://shop.example/orders/7 (200)", "the farthest last")
        #expect(unmatched.description.hasPrefix("No recorded exchange matches GET /products?page=2. Compared with:"))
    }

    /// Replaying a file that is not there (a `#filePath` gone wrong) says so, where it said only
    /// that there were no recorded exchanges (helper firsthour95).
    @Test func replayingAFileThatIsNotThereSaysSo() async throws {
        let file = scratchRecording()
        let api = try api(RecordingTransport(file: file, mode: .replay), baseURL: "https://shop.example")
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error, let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("expected an unmatched request, got \(String(describing: error))")
            return
        }
        #expect(unmatched.description == "No recorded exchange matches GET /products: there are no recorded exchanges in \(file.path), which does not exist.")
    }

    /// Query items of different names match in any order, but a list's items (one name, many
    /// values) in theirs: `sort=price&sort=name` is another request than `sort=name&sort=price`.
    /// Form fields are compared the same way.
    @Test func aListsItemsMatchInTheirOrder() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.archive(entries: [
            Self.entry("GET", "https://shop.example/products?sort[]=name&sort[]=price&page=1", body: "[]"),
        ]).utf8).write(to: file.creatingDirectory())
        let api = try api(RecordingTransport(file: file, mode: .replay), baseURL: "https://shop.example")
        let same: Data = try await api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 1, "sort": ["name", "price"]])).value
        #expect(same == Data("[]".utf8))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 1, "sort": ["price", "name"]])) as Promise<Data>)
        guard case .transportFailed(let failure)? = error, let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("the list in another order was answered: \(String(describing: error))")
            return
        }
        #expect(unmatched.mismatches.first?.reason == "query item sort[] is price, name, not name, price")
        let form = RecordedExchange.differences(recorded: BodyValues.form(Data("a=1&b=2&b=3".utf8)), sent: BodyValues.form(Data("b=2&a=1&b=3".utf8)), what: "form field")
        #expect(form.isEmpty, "\(form)")
        let swapped = RecordedExchange.differences(recorded: BodyValues.form(Data("b=2&b=3".utf8)), sent: BodyValues.form(Data("b=3&b=2".utf8)), what: "form field")
        #expect(swapped == ["form field b is 3, 2, not 2, 3"])
    }

    /// In `missing` mode a request the recording cannot answer is sent: with the server down,
    /// its error stays the network's, and says that the recording has no answer for it, and
    /// which exchange came nearest.
    @Test func anUnansweredRequestThatCannotBeSentNamesTheRecording() async throws {
        let file = scratchRecording("shop.har")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let closed = try ClosedPort()
        try Data(Self.archive(entries: [Self.entry("GET", closed.baseURL + "/products?page=1", body: "[]")]).utf8)
            .write(to: file.creatingDirectory())
        let api = try api(RecordingTransport(file: file, mode: .missing, upstream: TestTransport.make()), baseURL: closed.baseURL)
        let answered: Data = try await api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 1])).value
        #expect(answered == Data("[]".utf8))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 2])) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected the network's failure, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .cannotConnectToHost)
        let said = "\(failure)"
        #expect(said.contains("it was sent because the recording shop.har has no answer for it. No recorded exchange matches GET /products?page=2"), "\(said)")
        #expect(said.contains("query item page is 2, not 1"), "\(said)")
    }

    @Test func repeatedRequestsAreAnsweredInRecordedOrderThenTheLastAgain() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.archive(entries: [
            Self.entry("GET", "https://shop.example/flaky", status: 503, body: ""),
            Self.entry("GET", "https://shop.example/flaky", body: #"{"n": 1}"#),
            Self.entry("GET", "https://shop.example/flaky", body: #"{"n": 2}"#),
        ]).utf8).write(to: file.creatingDirectory())
        let configuration = APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false))
        let api = try api(RecordingTransport(file: file, mode: .replay), baseURL: "https://shop.example", configuration: configuration)
        var bodies: [String] = []
        for _ in 0..<3 {
            let body: Data = try await api.request(route: api.get(endpoint: "/flaky")).value
            bodies.append(String(decoding: body, as: UTF8.self))
        }
        #expect(bodies == [#"{"n": 1}"#, #"{"n": 2}"#, #"{"n": 2}"#], "the 503 was retried; then each in turn, then the last")
    }

    @Test func headersAndBodiesMatchWhenAskedJSONAsValues() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.archive(entries: [
            Self.entry("POST", "https://shop.example/search", requestHeaders: [("Accept-Language", "fr")],
                       requestBody: #"{"query": "tern", "filters": {"max": 3, "tags": ["sea"]}}"#, body: #"{"lang": "fr"}"#),
            Self.entry("POST", "https://shop.example/search", requestHeaders: [("Accept-Language", "en")],
                       requestBody: #"{"query": "tern", "filters": {"max": 3, "tags": ["sea"]}}"#, body: #"{"lang": "en"}"#),
            Self.entry("POST", "https://shop.example/search", requestHeaders: [("Accept-Language", "en")],
                       requestBody: #"{"query": "gull"}"#, body: #"{"lang": "en", "gull": true}"#),
        ]).utf8).write(to: file.creatingDirectory())
        let options = RecordingOptions(matchedHeaders: ["accept-language"], matchesBody: true)
        let api = try api(RecordingTransport(file: file, mode: .replay, options: options), baseURL: "https://shop.example")
        func search(_ body: String, language: String) async throws -> String {
            let route = api.post(endpoint: "/search")
            let parameters = BodyParameters(Data(body.utf8), contentType: "application/json", headers: ["Accept-Language": language])
            let data: Data = try await api.request(route: route, parameters: parameters).value
            return String(decoding: data, as: UTF8.self)
        }
        // Members in another order, other spacing: the same JSON value.
        #expect(try await search(#"{"filters":{"tags":["sea"],"max":3},"query":"tern"}"#, language: "en") == #"{"lang": "en"}"#)
        #expect(try await search(#"{"query": "tern", "filters": {"max": 3, "tags": ["sea"]}}"#, language: "fr") == #"{"lang": "fr"}"#)
        #expect(try await search(#"{"query":"gull"}"#, language: "en") == #"{"lang": "en", "gull": true}"#)
        await #expect(throws: APIError.self) { try await search(#"{"query": "tern", "filters": {"max": 4, "tags": ["sea"]}}"#, language: "en") }
    }
}

extension URL {
    /// The URL, its directory made.
    func creatingDirectory() throws -> URL {
        try FileManager.default.createDirectory(at: deletingLastPathComponent(), withIntermediateDirectories: true)
        return self
    }
}

extension RecordingTransportTests {
    /// A HAR file's text with these entries.
    static func archive(entries: [String]) -> String {
        #"{"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": ["# + entries.joined(separator: ",\n") + "]}}"
    }

    /// An entry's text, with only what HAR requires.
    static func entry(_ method: String, _ url: String, requestHeaders: [(String, String)] = [], requestBody: String? = nil,
                      status: Int = 200, body: String) -> String {
        let encode = { (text: String) in String(decoding: try! JSONEncoder().encode(text), as: UTF8.self) }
        let headers = requestHeaders.map { #"{"name": \#(encode($0.0)), "value": \#(encode($0.1))}"# }.joined(separator: ", ")
        let postData = requestBody.map { #", "postData": {"mimeType": "application/json", "text": \#(encode($0))}"# } ?? ""
        return #"""
        {"startedDateTime": "2026-11-29T09:00:00.000Z", "time": 1,
         "request": {"method": "\#(method)", "url": "\#(url)", "httpVersion": "HTTP/1.1", "headers": [\#(headers)],
                     "queryString": [], "cookies": [], "headersSize": -1, "bodySize": -1\#(postData)},
         "response": {"status": \#(status), "statusText": "", "httpVersion": "HTTP/1.1",
                      "headers": [{"name": "Content-Type", "value": "application/json"}], "cookies": [],
                      "content": {"size": \#(body.utf8.count), "mimeType": "application/json", "text": \#(encode(body))},
                      "redirectURL": "", "headersSize": -1, "bodySize": -1},
         "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}
        """#
    }
}
