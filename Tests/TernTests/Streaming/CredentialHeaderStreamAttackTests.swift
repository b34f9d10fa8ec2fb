import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API's own key (`X-Api-Key`), named once as a sensitive header, on streams and downloads:
/// neither is answered with what the cache kept for another key (a stream passes the cache; a
/// download's file holds its own key's account), and a recording of both hides the key the
/// delegate signs them with and replays them with another.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CredentialHeaderStreamAttackTests {
    typealias Origin = HTTPCacheTests.Origin

    let clock = TestClock()

    /// A server answering every path with two lines naming the account of the key it was sent,
    /// kept 60 s.
    static func origin() throws -> Origin {
        try Origin { request, _ in
            let who = CredentialHeaderCacheAttackTests.account(CredentialHeaderAttack.header("x-api-key", in: request))
            return HTTPCacheTests.answer("me: \(who)\nend\n", "Cache-Control: private, max-age=60\r\nContent-Type: text/plain\r\n")
        }
    }

    func api(_ transport: (any Transport)?, cache: HTTPCache? = nil, key: String?) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key"]),
                                                              cache: cache),
                              transport: transport, responseQueue: .global())
        api.delegate = key.map { RotatingKeyDelegate(name: "X-API-Key", keys: [$0]) }
        return api
    }

    func lines(_ api: AbstractAPI, _ url: String) async throws -> [String] {
        var lines: [String] = []
        for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
        return lines
    }

    func download(_ api: AbstractAPI, _ url: String, into directory: URL) async throws -> (String, CacheOutcome?) {
        let destination = directory.appendingPathComponent(UUID().uuidString)
        let file = try await api.download(route: .get(url), to: destination).value
        return (try String(contentsOf: file.fileURL, encoding: .utf8), file.response.cacheOutcome)
    }

    /// Alice's answer kept; Bob's stream and download of the same URL, then one with no key:
    /// each reaches the server and gets its own account, and Alice's entry still answers her.
    @Test(arguments: [false, true])
    func neitherAStreamNorADownloadIsAnsweredWithAnotherKeysEntry(onDisk: Bool) async throws {
        let directory = CredentialHeaderCacheAttackTests.scratchDirectory()
        let files = CredentialHeaderCacheAttackTests.scratchDirectory()
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: files)
        }
        let origin = try Self.origin()
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let (alice, bob) = ("alice-\(UUID().uuidString)", "bob-\(UUID().uuidString)")
        let aliceAPI = api(TestTransport.make(), cache: cache, key: alice), bobAPI = api(TestTransport.make(), cache: cache, key: bob)
        let nobody = api(TestTransport.make(), cache: cache, key: nil)
        let url = origin.url + "/feed"
        let kept: Response = try await aliceAPI.request(route: .get(url)).value
        #expect(kept.cacheOutcome == .miss)
        #expect(try await lines(bobAPI, url) == ["me: bob", "end"])
        #expect(try await download(bobAPI, url, into: files).0 == "me: bob\nend\n")
        #expect(try await download(nobody, url, into: files).0 == "me: -\nend\n")
        #expect(try await lines(nobody, url) == ["me: -", "end"])
        #expect(origin.count == 5)
        // Alice's own download may be answered from what is kept for her, or fetched again.
        #expect(try await download(aliceAPI, url, into: files).0 == "me: alice\nend\n")
        if onDisk { #expect(CredentialHeaderAttack.leaks(of: [alice, bob], under: directory).isEmpty) }
    }

    /// A stream and a download the delegate signs with the key, recorded: the key is in no
    /// entry; both replay, signed with another key.
    @Test func aRecordedStreamAndDownloadHideTheKey() async throws {
        let file = scratchRecording()
        let files = file.deletingLastPathComponent().appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let origin = try Self.origin()
        let key = "alice-\(UUID().uuidString)"
        let recording = api(try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), key: key)
        #expect(try await lines(recording, origin.url + "/feed") == ["me: alice", "end"])
        #expect(try await download(recording, origin.url + "/file", into: files).0 == "me: alice\nend\n")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains(key), "the key is in the recording")
        #expect(text.contains("/feed") && text.contains("/file"))
        let replaying = api(try RecordingTransport(file: file, mode: .replay), key: "bob-\(UUID().uuidString)")
        #expect(try await lines(replaying, origin.url + "/feed") == ["me: alice", "end"])
        #expect(try await download(replaying, origin.url + "/file", into: files).0 == "me: alice\nend\n")
    }
}
