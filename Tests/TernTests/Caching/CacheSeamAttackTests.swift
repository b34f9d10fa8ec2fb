import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache where it meets the other features, against servers that play them against each
/// other: a `304` whose fields try to change the kept answer's framing, encoding and cookies; a
/// field `Vary` names that the delegate sets as it signs; kept and revalidated answers handed
/// to downloads. On every transport, in memory and on disk.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheSeamAttackTests {
    typealias Origin = HTTPCacheTests.Origin
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-seam-\(UUID().uuidString)")
    let clock = TestClock()

    func cache(onDisk: Bool) throws -> HTTPCache {
        onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
    }

    func api(_ cache: HTTPCache, jar: CookieJar = CookieJar(), delegate: (any APIDelegate)? = nil, headers: HTTPHeaders = [:]) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(commonHeaders: headers, timeout: 30, retryPolicy: .never, cookies: .shared(jar), cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    static func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    // MARK: A 304's fields

    /// A `304` that says the body is 99999 bytes, gzipped, of another type, with a cookie: the
    /// answer is the kept body, whole and as kept (not decoded again), its `Content-Length` its
    /// own; the cookie is set this once and never kept, so a later hit sets nothing and no file
    /// holds it; the new type, which a `304` may change, is taken.
    @Test(arguments: [false, true])
    func a304CannotChangeTheKeptAnswersLengthEncodingOrCookies(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, _ in
            guard request.contains("If-None-Match: \"e\"") else {
                return HTTPCacheTests.answer("kept body", "Content-Type: text/plain\r\nCache-Control: max-age=0\r\nETag: \"e\"\r\n")
            }
            return "HTTP/1.1 304 Not Modified\r\nContent-Length: 99999\r\nContent-Encoding: gzip\r\nContent-Type: application/x-other\r\n"
                + "Set-Cookie: planted=from304; Path=/\r\nCache-Control: max-age=600\r\nETag: \"e\"\r\n\r\n"
        }
        let jar = CookieJar()
        let cache = try cache(onDisk: onDisk)
        let api = api(cache, jar: jar)
        func get() async throws -> Response { try await api.request(route: .get(origin.url + "/doc")).value }
        _ = try await get()
        let revalidated = try await get()
        #expect(revalidated.cacheOutcome == .revalidated)
        #expect(Self.text(revalidated) == "kept body")
        #expect(revalidated.headers["Content-Length"] == "9")
        #expect(revalidated.headers["Content-Encoding"] == nil)
        #expect(revalidated.headers["Content-Type"] == "application/x-other")
        #expect(jar.all.map(\.name) == ["planted"])
        jar.removeAll()
        let hit = try await get()
        #expect(hit.cacheOutcome == .hit && Self.text(hit) == "kept body")
        #expect(hit.headers["Content-Length"] == "9" && hit.headers["Content-Encoding"] == nil && hit.headers["Set-Cookie"] == nil)
        #expect(jar.all.isEmpty)
        #expect(origin.count == 2)
        if onDisk {
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let contents = try Data(contentsOf: directory.appendingPathComponent(name))
                #expect(contents.range(of: Data("from304".utf8)) == nil && contents.range(of: Data("99999".utf8)) == nil, "\(name)")
            }
        }
    }

    // MARK: Vary and the delegate

    /// Sets the `Accept-Language` the user chose as it signs, over the one the configuration
    /// sends.
    final class Localizes: APIDelegate, Sendable {
        let language = Locked("en")

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue(language.withLock { $0 }, forHTTPHeaderField: "Accept-Language")
        }
    }

    /// A response that varies on `Accept-Language`, which the delegate sets as it signs (over
    /// the configuration's `en`), and a server that answers every conditional request with a
    /// `304` whatever the language: each language gets its own answer, fresh or stale, and a
    /// revalidation is never sent with one language's validators for another's request.
    @Test(arguments: [false, true])
    func aFieldVaryNamesThatTheDelegateSetsKeepsEachValueItsOwnAnswer(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, number in
            if request.contains("If-None-Match") {
                return "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=0\r\nETag: \"any\"\r\n\r\n"
            }
            let language = request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("accept-language:") }?
                .split(separator: ":").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? "none"
            return HTTPCacheTests.answer("in \(language) v\(number)", "Vary: Accept-Language\r\nCache-Control: max-age=0\r\nETag: \"any\"\r\n")
        }
        let delegate = Localizes()
        let api = api(try cache(onDisk: onDisk), delegate: delegate, headers: ["Accept-Language": "en"])
        func get() async throws -> String { Self.text(try await api.request(route: .get(origin.url + "/greeting")).value) }
        #expect(try await get() == "in en v0")
        #expect(try await get() == "in en v0")
        delegate.language.withLock { $0 = "fr" }
        let french = try await get()
        #expect(french.hasPrefix("in fr "), "\(french)")
        let frenchAgain = try await get()
        #expect(frenchAgain.hasPrefix("in fr "), "\(frenchAgain)")
        delegate.language.withLock { $0 = "de" }
        let german = try await get()
        #expect(german.hasPrefix("in de "), "\(german)")
        delegate.language.withLock { $0 = "fr" }
        let again = try await get()
        #expect(again.hasPrefix("in fr "), "\(again)")
    }

    // MARK: Downloads answered by the cache

    /// A download revalidated by a `304`: the file is the kept body (a `304` has none), whole;
    /// a download answered from the cache with a body over its `maximumSize` fails with
    /// `responseTooLarge`, leaving no file.
    @Test(arguments: [false, true])
    func aRevalidatedDownloadWritesTheKeptBodyAndAKeptBodyTooLargeFailsTyped(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = String(repeating: "0123456789", count: 5_000)
        let origin = try Origin { request, _ in
            if request.contains("If-None-Match: \"e\"") {
                return "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=600\r\nETag: \"e\"\r\n\r\n"
            }
            return HTTPCacheTests.answer(body, "Cache-Control: max-age=0\r\nETag: \"e\"\r\n")
        }
        let api = api(try cache(onDisk: onDisk))
        let downloads = FileManager.default.temporaryDirectory.appendingPathComponent("tern-seam-downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: downloads) }
        let first = try await api.download(route: .get(origin.url + "/file"), to: downloads.appendingPathComponent("first")).value
        #expect(try Data(contentsOf: first.fileURL) == Data(body.utf8))
        let revalidated = try await api.download(route: .get(origin.url + "/file"), to: downloads.appendingPathComponent("revalidated")).value
        #expect(try Data(contentsOf: revalidated.fileURL) == Data(body.utf8))
        #expect(origin.requests.items.last?.contains("If-None-Match: \"e\"") == true)
        let small = downloads.appendingPathComponent("small")
        let tooLarge = await api.download(route: .get(origin.url + "/file"), to: small, maximumSize: 1_000).result
        guard case .failure(APIError.responseTooLarge) = tooLarge else {
            Issue.record("expected responseTooLarge, got \(tooLarge)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: small.path))
        #expect(origin.count == 2)
    }

    /// A download cut at 40,000 bytes of version 1; meanwhile the file changed to version 2,
    /// which a request fetched and the cache keeps, fresh. The resumed download asks for the
    /// rest of version 1 (`Range`, `If-Range: "v1"`), and the server ignores `If-Range` and
    /// sends the rest of version 2: the file is version 2 whole (its rest is not version 1's),
    /// never version 1's start and version 2's end, on disk and in memory.
    @Test(arguments: [false, true])
    func aResumedDownloadNeverJoinsAPartOfOneVersionToAnother(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let size = 100_000
        let versions = [1, 2].map { version in Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* (version == 1 ? 7 : 13) &+ version) }) }
        let current = Recorder<Int>()
        // Version 1's whole answer is cut at 40,000 bytes.
        let server = try RawServer.rangedBody {
            let version = current.items.last ?? 1
            return (versions[version - 1], "\"v\(version)\"", version == 1)
        }
        defer { server.stop() }
        let api = api(try cache(onDisk: onDisk))
        let url = server.baseURL + "/file"
        guard let cut = try await CutDownload.make(api, url: url) else { return }
        defer { try? FileManager.default.removeItem(at: cut.directory) }
        #expect(cut.resume.offset == 40_000 && cut.resume.validator == "\"v1\"")
        current.append(2)
        let fetched: Response = try await api.request(route: .get(url)).value
        #expect(fetched.body == versions[1])
        let file = try await api.download(route: .get(url), to: cut.destination, resumingFrom: cut.resume).value
        #expect(try Data(contentsOf: file.fileURL) == versions[1])
    }
}
