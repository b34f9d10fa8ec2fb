import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// Downloads and streams through an API with an `HTTPCache`: a kept 200 for the same URL is never
/// appended to a partial file nor answers a stream, a 206 is never kept as a whole response,
/// and what the server says not to keep is not kept.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct DownloadCacheAttackTests {
    typealias Lie = ResumeLie

    /// A server that has one version of the file at a time, under `ETag` "v<version>", with the
    /// `Cache-Control` given, and that answers conditions as RFC 9110 says: `If-None-Match`
    /// first (a 304), then `Range` under `If-Range` (a 206 from the offset asked for).
    static func server(version: Lie.Shared<Int>, cacheControl: String = "max-age=600", extra: String = "") throws -> Lie.Server {
        try Lie.Server { request, _ in
            let current = version.value
            let tag = "\"v\(current)\""
            let body = Lie.body(current)
            let headers = "ETag: \(tag)\r\nCache-Control: \(cacheControl)\r\n\(extra)"
            if let match = Lie.header("If-None-Match", in: request), match == tag {
                return Array("HTTP/1.1 304 Not Modified\r\n\(headers)\r\n".utf8)
            }
            if let range = Lie.header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()), start < body.count,
               Lie.header("If-Range", in: request).map({ $0 == tag }) ?? true {
                return Lie.answer("206 Partial Content", headers + "Content-Range: bytes \(start)-\(body.count - 1)/\(body.count)\r\n",
                                  body: body.suffix(from: start))
            }
            return Lie.answer("200 OK", headers, body: body)
        }
    }

    static func api(cache: HTTPCache) throws -> TestAPI {
        try TestAPI(baseURL: "http://127.0.0.1:1", configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache))
    }

    /// A fresh 200 kept for the URL: the resume's range goes to the server, its 206 is appended,
    /// and the 206 is not kept: the next request is answered with the whole 200 kept before.
    @Test func aFreshKeptResponseDoesNotAnswerAResumeAndA206IsNotKept() async throws {
        let directory = try Lie.Directory()
        let version = Lie.Shared(1)
        let server = try Self.server(version: version)
        defer { server.stop() }
        let api = try Self.api(cache: HTTPCache())
        let url = server.url + "/file"
        let primed = try await (api.request(route: .get(url)) as Promise<Response>).value
        #expect(primed.body == Lie.body(1))
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        let file = try await api.download(route: .get(url), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(1))
        #expect(file.resumedBytes == 1999)
        #expect(file.response.statusCode == 206)
        #expect(server.header("Range") == [nil, "bytes=1999-"])
        #expect(directory.files == ["file.bin"])
        // Still the whole 200, from the cache.
        let again = try await (api.request(route: .get(url)) as Promise<Response>).value
        #expect(again.statusCode == 200)
        #expect(again.body == Lie.body(1))
        #expect(server.requests.items.count == 2)
    }

    /// A stale 200 kept: the resume goes with the cache's `If-None-Match` as well as its range.
    /// The server's answer decides, and whatever it is, the file is its current version, whole:
    /// a 304 (the kept 200, whole, replaces the partial file), a 200 of a new version, or a 206
    /// of the new version the partial file holds (appended, and not kept).
    @Test(arguments: [(1, 1), (2, 1), (2, 2)])
    func aStaleKeptResponseAndAResumeMeetAtTheServer(serverVersion: Int, partialVersion: Int) async throws {
        let directory = try Lie.Directory()
        let version = Lie.Shared(1)
        let server = try Self.server(version: version, cacheControl: "no-cache")
        defer { server.stop() }
        let api = try Self.api(cache: HTTPCache())
        let url = server.url + "/file"
        let primed = try await (api.request(route: .get(url)) as Promise<Response>).value
        #expect(primed.body == Lie.body(1))
        version.value = serverVersion
        let resume = try directory.resume(of: Lie.body(partialVersion), offset: 2500, validator: "\"v\(partialVersion)\"", from: server.url + "/file")
        let file = try await api.download(route: .get(url), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(serverVersion))
        #expect(file.resumedBytes == (serverVersion == partialVersion && serverVersion != 1 ? 2499 : 0))
        #expect(directory.files == ["file.bin"])
        let again = try await (api.request(route: .get(url)) as Promise<Response>).value
        #expect(again.statusCode == 200)
        #expect(again.body == Lie.body(serverVersion))
    }

    /// Answers to a download that say not to keep them, or to vary on everything: the file is
    /// delivered, and the next download asks the server again.
    @Test(arguments: ["no-store", "max-age=600\r\nVary: *"])
    func aDownloadAnsweredNotToBeKeptIsDeliveredAndNotKept(cacheControl: String) async throws {
        let directory = try Lie.Directory()
        let server = try Self.server(version: Lie.Shared(1), cacheControl: cacheControl)
        defer { server.stop() }
        let api = try Self.api(cache: HTTPCache())
        for _ in 0..<2 {
            _ = try await api.download(route: .get(server.url + "/file"), to: directory.destination, replacing: true).value
            #expect(try Data(contentsOf: directory.destination) == Lie.body(1))
            #expect(directory.files == ["file.bin"])
        }
        #expect(server.requests.items.count == 2)
    }

    /// A fresh 200 kept for the URL does not answer a stream of it: the stream reaches the server
    /// and reads its current version; and the stream's own answer, however cacheable it says it
    /// is, is not kept.
    @Test func aStreamIsNeverAnsweredFromTheCacheNorKept() async throws {
        let version = Lie.Shared(1)
        let server = try Self.server(version: version)
        defer { server.stop() }
        let api = try Self.api(cache: HTTPCache())
        let url = server.url + "/file"
        let primed = try await (api.request(route: .get(url)) as Promise<Response>).value
        #expect(primed.body == Lie.body(1))
        version.value = 2
        var streamed = Data()
        for try await chunk in api.stream(route: .get(url)) { streamed.append(chunk) }
        #expect(streamed == Lie.body(2))
        #expect(server.requests.items.count == 2)
        // The other URL, first streamed, is not answered from the stream's response.
        let other = server.url + "/other"
        var first = Data()
        for try await chunk in api.stream(route: .get(other)) { first.append(chunk) }
        #expect(first == Lie.body(2))
        version.value = 3
        let afterStream = try await (api.request(route: .get(other)) as Promise<Response>).value
        #expect(afterStream.body == Lie.body(3))
        #expect(server.requests.items.count == 4)
    }
}
