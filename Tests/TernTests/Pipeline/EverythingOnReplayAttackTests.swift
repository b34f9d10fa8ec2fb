#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A session recorded through an API with every feature on (``EverythingOn``), then replayed
/// through the same API's settings: a refresh on a 401, a cookie, a revalidation answered `304`,
/// a `503` retried, a same-origin redirect, a lie about the length. The replay answers alike,
/// offline, and pins hold as the Recording article promises: an answer from the file passes
/// every pin, as a stub's does; a request that reaches the network (`.missing`) is pinned.
@Suite(.onTestThreads, .enabled(if: TestTransport.isCurl), .timeLimit(.minutes(1)))
struct EverythingOnReplayAttackTests {
    typealias Site = EverythingOn

    /// The session: each path and what its answer's body was, or the error's case.
    static let paths = ["/profile", "/etag", "/etag", "/flaky", "/moved", "/cookie", "/cookie", "/lying"]

    static func site() throws -> Site {
        let counts = Recorder<String>()
        let cookie = "jar-" + UUID().uuidString
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            counts.append(request.path)
            let count = counts.items.filter { $0 == request.path }.count
            switch request.path {
            case "/etag":
                if request.header("If-None-Match") == "\"e1\"" {
                    connection.send("HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\nCache-Control: private, max-age=0\r\n\r\n")
                } else {
                    connection.send(Site.response(#"{"v": "etag"}"#, headers: "ETag: \"e1\"\r\nCache-Control: private, max-age=0\r\n"))
                }
            case "/flaky" where count == 1:
                connection.send(Site.response(#"{"busy": true}"#, status: "503 Service Unavailable"))
            case "/moved":
                connection.send(Site.response("", status: "301 Moved Permanently", headers: "Location: /landing\r\n"))
            case "/cookie":
                let sent = request.header("Cookie")?.contains(cookie) == true
                connection.send(Site.response(#"{"sent": \#(sent)}"#, headers: "Set-Cookie: session=\(cookie); Secure; HttpOnly\r\n"))
            case "/lying":
                connection.send(Site.response(#"{"cut": 1}"#, length: 400))
                return false
            default:
                connection.send(Site.response(#"{"path": "\#(request.path)"}"#))
            }
            return true
        }
        site.remember(cookie)
        return site
    }

    /// What a request came to, in words that compare.
    static func outcome(_ result: Result<Response, any Error>) -> String {
        switch result {
        case .success(let response): "\(response.statusCode) " + String(decoding: response.body, as: UTF8.self)
        case .failure(let error as APIError):
            switch error {
            case .transportFailed: "transportFailed"
            case .unacceptableStatus(let failure): "status \(failure.statusCode)"
            default: "\(error)"
            }
        case .failure(let error): "untyped \(error)"
        }
    }

    static func session(_ api: AbstractAPI, _ settled: Settlements) async -> [String] {
        var outcomes = [String]()
        for path in paths {
            outcomes.append(outcome(await settled.watch(api.request(route: .get(path)) as Promise<Response>).result))
        }
        return outcomes
    }

    @Test func aSessionReplaysAsRecordedWithPinsAsDocumented() async throws {
        let site = try Self.site()
        let settled = Settlements()
        let recorded = await Self.session(try site.api(), settled)
        #expect(recorded.allSatisfy { !$0.hasPrefix("untyped") }, "\(recorded)")
        #expect(recorded[0] == #"200 {"path": "/profile"}"#)
        #expect(recorded[1] == #"200 {"v": "etag"}"#)
        #expect(recorded[2] == #"200 {"v": "etag"}"#)
        #expect(recorded[4] == #"200 {"path": "/landing"}"#)
        #expect(recorded[6] == #"200 {"sent": true}"#)
        #expect(recorded[7] == "transportFailed")
        #expect(site.leakedSecrets() == [])
        let heard = site.received.items.count

        // Replayed: same settings, a cold cache and an empty jar of their own, offline.
        let jar = CookieJar()
        let replay = try site.api(mode: .replay) {
            $0.cache = try? HTTPCache(directory: site.folder.appendingPathComponent("cache/replay"))
            $0.cookies = .shared(jar)
        }
        #expect(await Self.session(replay, settled) == recorded)
        // Answers from the file pass every pin (documented): a wrong pin replays alike.
        let wronglyPinned = try site.api(mode: .replay, pins: [CertificatePinningTests.wrongPin]) {
            $0.cache = try? HTTPCache(directory: site.folder.appendingPathComponent("cache/replay-wrong"))
            $0.cookies = .shared(CookieJar())
        }
        #expect(await Self.session(wronglyPinned, settled) == recorded)
        #expect(site.received.items.count == heard)

        // What the file lacks, in `.missing` mode, goes to the network: pinned there. (Signed
        // with the server's token: the file's refresh answers `[redacted]`, and a request
        // signed with it is not sent; RecordingReplayedCredentialAttackTests.)
        let serverSigned = TokenSigner(access: site.currentToken ?? "none", refresh: "unused-refresh")
        let missing = try site.api(mode: .missing, pins: [CertificatePinningTests.wrongPin], signer: serverSigned)
        let unrecorded = await settled.watch(missing.request(route: .get("/unrecorded")) as Promise<Response>).result
        guard case .failure(APIError.pinningFailed) = unrecorded else { Issue.record("expected pinningFailed, got \(unrecorded)"); return }
        #expect(site.received.items.count == heard)
        // And with the right pin it is sent, and recorded beside the rest.
        let rightly = try site.api(mode: .missing, signer: serverSigned)
        let sent = Self.outcome(await settled.watch(rightly.request(route: .get("/unrecorded")) as Promise<Response>).result)
        #expect(sent == #"200 {"path": "/unrecorded"}"#)
        #expect(await eventually(timeout: 5) { settled.count == 3 * Self.paths.count + 2 })
        #expect(site.leakedSecrets() == [])
    }
}
#endif
