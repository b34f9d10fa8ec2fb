import Foundation
import Testing
import Tern
import TernTesting

/// A revalidation whose answer comes late: the server holds the `304` (or the `HEAD`'s `200`)
/// that says v1 is still good while the document changes to v2, and another request fetches
/// v2, which is kept. The late answer speaks of v1 only (RFC 9111, §4.3.4): written back over
/// v2, it had everyone served v1, fresh, for the ten minutes it promised. So did a slow `200`
/// to a request sent before the one that fetched v2. In memory and on disk.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LateRevalidationAttackTests {
    @Test(arguments: [false, true], [false, true]) func aLateAnswerAboutTheOldVersionLeavesTheNewOneKept(byHead: Bool, onDisk: Bool) async throws {
        let release = DispatchSemaphore(value: 0)
        let held = Locked(false)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let revalidates = request.contains("If-None-Match: \"1\"") || request.hasPrefix("HEAD ")
                let first = revalidates && held.withLock { taken in defer { taken = true }; return !taken }
                // The old version's confirmation, held until the new version is kept.
                if first { _ = release.wait(timeout: .now() + 20) }
                let answer = if first {
                    "HTTP/1.1 \(byHead ? "200 OK" : "304 Not Modified")\r\nETag: \"1\"\r\nContent-Length: 2\r\nCache-Control: max-age=600\r\n\r\n"
                } else if revalidates {
                    RawServer.Connection.response("v2", headers: "ETag: \"2\"\r\nCache-Control: max-age=600\r\n")
                } else {
                    RawServer.Connection.response("v1", headers: "ETag: \"1\"\r\nCache-Control: max-age=0\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-late-revalidation-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/doc"
        _ = try await (api.request(route: .get(url)) as Promise<Response>).value
        let late: Promise<Response> = api.request(route: byHead ? .head(url) : .get(url))
        #expect(await eventually { held.withLock { $0 } })
        let newer: Response = try await api.request(route: .get(url), options: RequestOptions(cacheDirectives: CacheDirectives(noCache: true))).value
        #expect(String(decoding: newer.body, as: UTF8.self) == "v2")
        release.signal()
        _ = try await late.value
        let after: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: after.body, as: UTF8.self) == "v2", "served \(String(decoding: after.body, as: UTF8.self)), \(String(describing: after.cacheOutcome))")
        #expect(after.cacheOutcome == .hit)
    }
    /// A slow answer to an earlier request (a prefetch) that ends after a later request (a pull
    /// to refresh) had the newer version kept: the older one replaced it, and was served fresh.
    @Test(arguments: [false, true]) func aLateAnswerToAnEarlierRequestLeavesTheNewerOneKept(onDisk: Bool) async throws {
        let release = DispatchSemaphore(value: 0)
        let held = Locked(false)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                let first = held.withLock { taken in defer { taken = true }; return !taken }
                if first { _ = release.wait(timeout: .now() + 20) }
                let version = first ? "v1" : "v2"
                guard connection.send(RawServer.Connection.response(version, headers: "ETag: \"\(version)\"\r\nCache-Control: max-age=600\r\n")) else { return }
            }
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-late-answer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/feed"
        let prefetch: Promise<Response> = api.request(route: .get(url))
        #expect(await eventually { held.withLock { $0 } })
        let refreshed: Response = try await api.request(route: .get(url), options: RequestOptions(cacheDirectives: CacheDirectives(noCache: true))).value
        #expect(String(decoding: refreshed.body, as: UTF8.self) == "v2")
        release.signal()
        #expect(String(decoding: try await prefetch.value.body, as: UTF8.self) == "v1")
        let after: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: after.body, as: UTF8.self) == "v2", "served \(String(decoding: after.body, as: UTF8.self)), \(String(describing: after.cacheOutcome))")
        #expect(after.cacheOutcome == .hit)
    }
}
