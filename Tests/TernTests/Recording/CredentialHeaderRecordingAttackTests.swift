import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API's own key (`X-Api-Key`), named once as a sensitive header, where a recording meets
/// it with no secret named to the recording: signed by the delegate under another case and
/// rotated by a refresh that issues the new key in a body recorded before the key is sent;
/// named only by a request's own redirect policy; in an unmatched request's error, a short key
/// too. Recorded from a real loopback server; the file is searched for every key.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CredentialHeaderRecordingAttackTests {
    typealias Origin = HTTPCacheTests.Origin

    func text(of file: URL) throws -> String { try String(contentsOf: file, encoding: .utf8) }

    func api(_ transport: any Transport, sensitive: Set<String> = ["x-api-key"]) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, redirectPolicy: RedirectPolicy(sensitiveHeaders: sensitive)),
                    transport: transport, responseQueue: .global())
    }

    /// The delegate signs `/me` under `X-API-KEY` with a key the server then refuses (401); its
    /// refresh fetches the next key from `/refresh` (a body the recording writes before the key
    /// is ever sent), and the replay goes with it. Neither key is in the file; the recording
    /// replays the whole scene with other keys.
    @Test func aKeyRotatedByARefreshIsHiddenWhereItWasIssued() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (old, new) = ("old-key-\(UUID().uuidString)", "new-key-\(UUID().uuidString)")
        let origin = try Origin { request, _ in
            if request.hasPrefix("POST /refresh") { return HTTPCacheTests.answer(#"{"key": "\#(new)"}"#, "Content-Type: application/json\r\n") }
            let key = CredentialHeaderAttack.header("x-api-key", in: request)
            return key == new ? HTTPCacheTests.answer(#"{"name": "tern", "price": 1}"#, "Content-Type: application/json\r\n")
                : HTTPCacheTests.answer(#"{"code": 1, "message": "no"}"#, status: "401 Unauthorized", "Content-Type: application/json\r\n")
        }
        let base = origin.url
        struct Issued: Decodable { let key: String }
        /// A delegate whose refresh asks `/refresh` through `transport`, on an API that names no
        /// sensitive header (the key is only in its body).
        func delegate(_ first: String, _ transport: any Transport) -> RotatingKeyDelegate {
            let refresher = api(transport, sensitive: [])
            return RotatingKeyDelegate(name: "X-API-KEY", keys: [first]) {
                let issued: Issued = try await refresher.request(route: .post(base + "/refresh"), options: RequestOptions(authenticates: false)).value
                return issued.key
            }
        }
        let recorder = try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make())
        let recording = api(recorder)
        let signer = delegate(old, recorder)
        recording.delegate = signer
        let product: Product = try await recording.request(route: .get(base + "/me")).value
        #expect(product == Product(name: "tern", price: 1))
        #expect(signer.refreshes.withLock { $0 } == 1)
        #expect(origin.requests.items.compactMap { CredentialHeaderAttack.header("x-api-key", in: $0) } == [old, new])
        let text = try text(of: file)
        #expect(!text.contains(old), "the old key is in the recording")
        #expect(!text.contains(new), "the new key is in the recording")
        // Replayed with keys the recording never saw: the same scene, offline.
        let replayer = try RecordingTransport(file: file, mode: .replay)
        let replaying = api(replayer)
        let replaySigner = delegate("other-\(UUID().uuidString)", replayer)
        replaying.delegate = replaySigner
        let replayed: Product = try await replaying.request(route: .get(base + "/me")).value
        #expect(replayed == product)
        #expect(replaySigner.refreshes.withLock { $0 } == 1)
    }

    /// A key only the request's own policy names (the configuration names none), sent as the
    /// request's own header: hidden in the file, and in the words of a request the recording
    /// cannot answer.
    @Test func aKeyOnlyTheRequestsOwnPolicyNamesIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let key = "tenant-\(UUID().uuidString)"
        let origin = try Origin { _, _ in HTTPCacheTests.answer(#"{"name": "tern", "price": 1}"#, "Content-Type: application/json\r\n") }
        let options = RequestOptions(headers: ["X-Tenant-Key": key], redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-TENANT-key"]))
        let recording = api(try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), sensitive: [])
        let recorded: Product = try await recording.request(route: .get(origin.url + "/me"), options: options).value
        #expect(!(try text(of: file).contains(key)), "the key is in the recording")
        let replaying = api(try RecordingTransport(file: file, mode: .replay), sensitive: [])
        #expect(try await replaying.request(route: .get(origin.url + "/me"), options: options).value == recorded)
        do {
            let _: Product = try await replaying.request(route: .get(origin.url + "/other"), options: options).value
            Issue.record("a request the recording does not hold was answered")
        } catch {
            #expect(!"\(error)".contains(key), "the key is in the error: \(error)")
            #expect(!String(reflecting: error).contains(key), "the key is in the error: \(String(reflecting: error))")
        }
    }

    /// A key the API names sensitive (or `Authorization`), matched on replay (`matchedHeaders`),
    /// against an exchange recorded without one: the error says why the nearest does not match,
    /// and names the key's field, never its value, however short (a value under six characters
    /// is not searched for in the words, and was told).
    @Test(arguments: [("X-Api-Key", "k9x"), ("Authorization", "k9x"), ("X-Api-Key", "key-\(UUID().uuidString)")])
    func aMatchedKeyStaysOutOfTheUnmatchedError(name: String, key: String) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let origin = try Origin { _, _ in HTTPCacheTests.answer(#"{"name": "tern", "price": 1}"#, "Content-Type: application/json\r\n") }
        let options = RecordingOptions(matchedHeaders: [name])
        let recording = api(try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let _: Product = try await recording.request(route: .get(origin.url + "/me")).value
        let replaying = api(try RecordingTransport(file: file, mode: .replay, options: options))
        do {
            let _: Product = try await replaying.request(route: .get(origin.url + "/me"), options: RequestOptions(headers: [name: key])).value
            Issue.record("a request without its recorded key's value was answered")
        } catch {
            let words = "\(error)"
            #expect(words.contains("header \(name) is [redacted]"), "\(words)")
            #expect(!words.contains(key), "the key is in the error: \(words)")
        }
    }
}
