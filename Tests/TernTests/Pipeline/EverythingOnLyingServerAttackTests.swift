#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A server that lies, to an API with every feature on (``EverythingOn``): lengths that are not
/// the body's, a HEAD with a body, bytes on an idle kept-alive connection, a 304 nobody asked
/// for, `Vary: *`, cookies for a public suffix or another domain, redirects to plain http and to
/// another origin with another key. Each request settles once with its answer or a typed
/// `APIError`; no token, key or cookie value reaches the cache's files, the recording or the
/// log; nothing is written but the test's own files.
@Suite(.onTestThreads, .enabled(if: TestTransport.isCurl), .timeLimit(.minutes(1)))
struct EverythingOnLyingServerAttackTests {
    typealias Site = EverythingOn

    /// `route` through `api`, watched by `settled`.
    static func get(_ path: String, _ api: AbstractAPI, _ settled: Settlements, method: Route? = nil) async -> Result<Response, any Error> {
        await settled.watch(api.request(route: method ?? .get(path)) as Promise<Response>).result
    }

    /// Sends `path` with 0, 1 and 2 appended, in turn: each gets its own path back as its body,
    /// or fails typed; never another's bytes.
    static func expectEachAnswersItself(_ path: String, _ api: AbstractAPI, _ settled: Settlements) async {
        for index in 0..<3 {
            switch await get("\(path)\(index)", api, settled) {
            case .success(let response): #expect(String(decoding: response.body, as: UTF8.self) == "\(path.dropFirst())\(index)")
            case .failure(let error): #expect(error is APIError, "\(error)")
            }
        }
    }

    /// What every scene checks at its end: each promise settled once, no secret written, only
    /// the test's own files.
    static func checkAfterwards(_ site: Site, _ settled: Settlements, requests: Int) async {
        #expect(await eventually(timeout: 5) { settled.count == requests }, "\(settled.count) of \(requests) settled")
        #expect(settled.count == requests)
        #expect(site.leakedSecrets() == [])
        // What was looked in holds what it should: the recording its hidden credentials, the
        // log its lines.
        let recording = (try? String(contentsOf: site.recordingFile, encoding: .utf8)) ?? ""
        #expect(recording.contains("[redacted]"))
        #expect(!site.log.items.isEmpty)
        let strays = site.filesMade().filter { name in
            !["/cache", "/jar", "/recording", "/files"].contains { name == $0 || name.hasPrefix($0 + "/") }
        }
        #expect(strays == [])
        #expect(site.signer.refreshes.withLock { $0 } >= 1)
    }

    static func isTyped(_ result: Result<Response, any Error>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return error is APIError
    }

    @Test func aLengthLongerThanTheBodyFailsTypedAndIsNotCached() async throws {
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send(Site.response("short-body-marker", headers: "Cache-Control: public, max-age=60\r\n", length: 500))
            return false   // hung up short
        }
        let api = try site.api()
        let settled = Settlements()
        let result = await Self.get("/long", api, settled)
        #expect(Self.isTyped(result), "\(result)")
        // Retried (GET, a cut connection) and never kept: the next request reaches the server.
        let before = site.received.items.filter { $0.hasPrefix("GET /long") }.count
        let again = await Self.get("/long", api, settled)
        #expect(Self.isTyped(again), "\(again)")
        #expect(site.received.items.filter { $0.hasPrefix("GET /long") }.count > before)
        let cached = (try? FileManager.default.contentsOfDirectory(atPath: site.cacheDirectory.path)) ?? []
        for name in cached {
            let data = (try? Data(contentsOf: site.cacheDirectory.appendingPathComponent(name))) ?? Data()
            #expect(!String(decoding: data, as: UTF8.self).contains("short-body-marker"), "\(name) keeps the cut body")
        }
        await Self.checkAfterwards(site, settled, requests: 2)
    }

    /// A body longer than its `Content-Length`: the answer is what the length framed, and the
    /// rest, left on the kept-alive connection, never answers the next request.
    @Test func bytesPastTheLengthNeverAnswerTheNextRequest() async throws {
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            let name = String(request.path.dropFirst())
            if name == "first" {
                connection.send(Site.response("first", length: 5) + "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
            } else {
                connection.send(Site.response(name))
            }
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        let first = await Self.get("/first", api, settled)
        #expect((try? first.get()).map { String(decoding: $0.body, as: UTF8.self) } == "first")
        await Self.expectEachAnswersItself("/next", api, settled)
        await Self.checkAfterwards(site, settled, requests: 4)
    }

    /// A HEAD answered with a body, then a GET on the same connection: the HEAD has no body,
    /// and the GET gets its own answer, not the HEAD's bytes.
    @Test func aHeadAnsweredWithABodyLeavesNothingForTheNextRequest() async throws {
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            if request.method == "HEAD" {
                connection.send("HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\nHTTP/1.1 200 OK\r\nContent-Le")
            } else {
                connection.send(Site.response(String(request.path.dropFirst())))
            }
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        let head = await Self.get("/head", api, settled, method: .head("/head"))
        #expect((try? head.get())?.body.isEmpty == true, "\(head)")
        await Self.expectEachAnswersItself("/after", api, settled)
        await Self.checkAfterwards(site, settled, requests: 4)
    }

    /// A whole forged response sent on a kept-alive connection while it is idle, before the
    /// next request: the next request never takes it for its answer.
    @Test func lateBytesOnAnIdleConnectionNeverAnswerTheNextRequest() async throws {
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send(Site.response(String(request.path.dropFirst())))
            connection.pause(100)
            connection.send(Site.response("forged"))
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        var answers = [String]()
        for index in 0..<4 {
            let result = await Self.get("/idle\(index)", api, settled)
            switch result {
            case .success(let response): answers.append(String(decoding: response.body, as: UTF8.self))
            case .failure(let error): #expect(error is APIError, "\(error)")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(!answers.contains("forged"))
        #expect(answers == answers.filter { $0.hasPrefix("idle") })
        // The recording holds no forged answer either.
        let recording = (try? String(contentsOf: site.recordingFile, encoding: .utf8)) ?? ""
        #expect(!recording.contains("forged"))
        await Self.checkAfterwards(site, settled, requests: 4)
    }

    /// A `304` to a request that sent no validator: nothing to revalidate, so it is the answer
    /// (and not a success), and it is not kept.
    @Test func aNotModifiedNobodyAskedForIsNoSuccess() async throws {
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: public, max-age=60\r\n\r\n")
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        for _ in 0..<2 {
            let result = await Self.get("/unchanged", api, settled)
            guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
                Issue.record("expected a 304's unacceptableStatus, got \(result)")
                continue
            }
            #expect(failure.statusCode == 304)
        }
        // Not kept: each reached the server.
        #expect(site.received.items.filter { $0.hasPrefix("GET /unchanged") && $0.contains("Bearer access-") }.count == 2)
        await Self.checkAfterwards(site, settled, requests: 2)
    }

    /// `Vary: *` with a long freshness: never answered from the cache.
    @Test func aVaryStarAnswerIsNeverServedFromTheCache() async throws {
        let counter = Recorder<Int>()
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            let count = counter.appendCounting(1)
            connection.send(Site.response("vary\(count)", headers: "Cache-Control: public, max-age=600\r\nVary: *\r\nETag: \"v\(count)\"\r\n"))
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        var bodies = [String]()
        for _ in 0..<3 {
            let response = try await Self.get("/varied", api, settled).get()
            bodies.append(String(decoding: response.body, as: UTF8.self))
            #expect(response.cacheOutcome != .hit)
        }
        #expect(bodies == ["vary1", "vary2", "vary3"])
        await Self.checkAfterwards(site, settled, requests: 3)
    }

    /// Cookies for a public suffix, for another domain, for another host: refused; the
    /// server's own kept, sent back, and its value kept out of the cache's files (the answer
    /// that set it was cacheable), the recording and the log.
    @Test func cookiesForAPublicSuffixOrAnotherDomainAreRefused() async throws {
        let value = { (name: String) in "\(name)-" + UUID().uuidString }
        let values = (own: value("own"), suffix: value("suffix"), other: value("other"), host: value("host"))
        let cookieServer = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            let cookies = request.header("Cookie") ?? ""
            connection.send(Site.response(#"{"cookies": "\#(cookies.isEmpty ? "none" : "some")"}"#, headers:
                "Cache-Control: public, max-age=600\r\n"
                + "Set-Cookie: sid=\(values.own); Secure; HttpOnly; Path=/; Max-Age=600\r\n"
                + "Set-Cookie: suffix=\(values.suffix); Domain=co.uk; Path=/; Max-Age=600\r\n"
                + "Set-Cookie: other=\(values.other); Domain=example.com; Path=/; Max-Age=600\r\n"
                + "Set-Cookie: host=\(values.host); Domain=127.0.0.2; Path=/; Max-Age=600\r\n"))
            return true
        }
        cookieServer.remember(values.own, values.suffix, values.other, values.host)
        let api = try cookieServer.api()
        let settled = Settlements()
        _ = try await Self.get("/cookies", api, settled).get()
        let kept = cookieServer.jar.all
        #expect(kept.map(\.name) == ["sid"], "\(kept)")
        // The next request (another URL, not cached) sends the server's own cookie alone.
        _ = try await Self.get("/cookies/again", api, settled).get()
        let sent = cookieServer.received.items.last { $0.hasPrefix("GET /cookies/again") } ?? ""
        #expect(sent.contains("sid=\(values.own)"))
        #expect(![values.suffix, values.other, values.host].contains { sent.contains($0) })
        // The jar's file keeps the cookie it keeps, and none of those it refused.
        cookieServer.jar.waitForWrites()
        let jarText = (try? String(contentsOf: cookieServer.jarFile, encoding: .utf8)) ?? ""
        #expect(jarText.contains(values.own))
        // The answer that set it was kept by the cache (so its files are worth searching).
        #expect(!((try? FileManager.default.contentsOfDirectory(atPath: cookieServer.cacheDirectory.path)) ?? []).isEmpty)
        #expect(![values.suffix, values.other, values.host].contains { jarText.contains($0) })
        await Self.checkAfterwards(cookieServer, settled, requests: 2)
    }

    /// A redirect from the HTTPS API to plain http: refused (`redirectFailed`), and the plain
    /// server hears nothing: not the token, the key or a cookie.
    @Test func aRedirectToPlainHTTPIsRefusedBeforeAnyByteLeaves() async throws {
        let heard = Recorder<String>()
        let plain = try RawServer { connection in
            while let request = connection.readRequest() {
                heard.append(request)
                connection.send(RawServer.Connection.response("plain"))
            }
        }
        defer { plain.stop() }
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send(Site.response("", status: "302 Found", headers: "Location: \(plain.baseURL)/landing\r\n"))
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        let result = await Self.get("/away", api, settled)
        guard case .failure(APIError.redirectFailed) = result else { Issue.record("expected redirectFailed, got \(result)"); return }
        #expect(heard.items.isEmpty)
        await Self.checkAfterwards(site, settled, requests: 1)
    }

    /// A redirect to another origin (another port of the pinned host): the token and the key
    /// stay behind; and when that origin shows another key (another CA, trusted too), the pin
    /// refuses it before any byte of the request is sent.
    @Test func aRedirectToAnotherOriginTakesNoCredentialAndMeetsThePins() async throws {
        let other = try Site { request, connection in
            connection.send(Site.response("elsewhere"))
            return true
        }
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send(Site.response("", status: "302 Found", headers: "Location: \(other.url)/landing\r\n"))
            return true
        }
        // Both CAs trusted: the other origin's key, not its CA, is what the pin refuses.
        let bundle = site.folder.appendingPathComponent("files/authorities.pem")
        try (Data(contentsOf: site.certificates.authority) + Data(contentsOf: other.certificates.authority)).write(to: bundle)
        let api = try site.api(trusting: bundle)
        let settled = Settlements()
        let pinned = await Self.get("/to-other-key", api, settled)
        guard case .failure(APIError.pinningFailed) = pinned else { Issue.record("expected pinningFailed, got \(pinned)"); return }
        #expect(other.received.items.isEmpty)
        // With both keys pinned, the redirect is followed, without the token, key or cookie.
        let both = try site.api(trusting: bundle, pins: [try site.serverPin, try other.serverPin])
        let followed = await Self.get("/to-other-port", both, settled)
        #expect((try? followed.get()).map { String(decoding: $0.body, as: UTF8.self) } == "elsewhere", "\(followed)")
        let arrived = other.received.items.joined()
        #expect(!arrived.isEmpty)
        #expect(!arrived.lowercased().contains("authorization"))
        #expect(!arrived.contains(site.apiKey))
        #expect(!site.secrets.contains { arrived.contains($0) })
        await Self.checkAfterwards(site, settled, requests: 2)
    }
}
#endif
