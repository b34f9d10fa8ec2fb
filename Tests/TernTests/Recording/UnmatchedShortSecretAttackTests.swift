import Foundation
import Testing
import Tern
import TernTesting

/// A secret shorter than six characters (a PIN, a short password), named, in a request the
/// recording does not answer. RecordingAndReplaying.md promises: "A value shorter than six
/// characters is hidden only where it is named (…). The words of an ``UnmatchedRequest``, and of
/// a response too long to record, hide the request's own the same way (a CI log keeps them)."
/// The words hide the values `Redactor.values(hiddenIn:)` returns, which are only those long
/// enough to be searched for; a mismatched JSON body is quoted raw (`JSON body differs: …`) and
/// a query item the recording lacks is quoted with its value (`query item pin=… was not
/// recorded`): the short secret is in the words, right where it is named. (The words are the
/// unmatched request's; the error's own head names the URL as every `APIError` does.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct UnmatchedShortSecretAttackTests {
    let baseURL = "https://shop.example"
    let options = RecordingOptions(matchesBody: true, secrets: ["pin"])
    let secret = "Qz7xK"

    func words(recordingWith record: (TestAPI) async throws -> Void, replaying replay: (TestAPI) -> Promise<Product>) async throws -> String {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/login", answers: .json(#"{"name": "tern", "price": 1}"#)))
        stubs.add(Stub(.post, "/unlock", answers: .json(#"{"name": "tern", "price": 1}"#)))
        stubs.add(Stub(.get, "/search", answers: .json(#"{"name": "tern", "price": 1}"#)))
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: stubs, options: options))
        try await record(recording)
        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        guard case .transportFailed(let failure)? = await apiError(of: replay(replaying)), let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("not failed with an UnmatchedRequest")
            return ""
        }
        return unmatched.description
    }

    @Test func aShortPasswordInAMismatchedJSONBodyIsNotInTheWords() async throws {
        let words = try await words(recordingWith: { api in
            let _: Product = try await api.request(route: api.post(endpoint: "/login"), parameters: JSONParameters(["user": "ann", "password": "Ab3dE"])).value
        }, replaying: { api in
            api.request(route: api.post(endpoint: "/login"), parameters: JSONParameters(["user": "bob", "password": secret]))
        })
        #expect(words.contains("password"), "the words do not name the body: \(words)")
        #expect(!words.contains(secret), "the short password is in the words: \(words)")
    }

    @Test func aShortPinInAQueryItemNotRecordedIsNotInTheWords() async throws {
        let words = try await words(recordingWith: { api in
            let _: Product = try await api.request(route: api.get(endpoint: "/search"), parameters: URLParameters(["q": "tern"])).value
        }, replaying: { api in
            api.request(route: api.get(endpoint: "/search"), parameters: URLParameters(["q": "tern", "pin": secret]))
        })
        #expect(words.contains("pin"), "the words do not name the query: \(words)")
        #expect(!words.contains(secret), "the short pin is in the words: \(words)")
    }

    @Test func aShortPinInAFormFieldNotRecordedIsNotInTheWords() async throws {
        let words = try await words(recordingWith: { api in
            let _: Product = try await api.request(route: api.post(endpoint: "/unlock"), parameters: FormParameters(["door": "front"])).value
        }, replaying: { api in
            api.request(route: api.post(endpoint: "/unlock"), parameters: FormParameters(["door": "front", "pin": "1234"]))
        })
        #expect(words.contains("form field pin"), "the words do not name the form: \(words)")
        #expect(!words.contains("1234"), "the short pin is in the words: \(words)")
    }
}
