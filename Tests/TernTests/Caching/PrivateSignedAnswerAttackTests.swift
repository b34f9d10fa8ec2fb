import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A signed request (`Authorization`) answered `Cache-Control: private, max-age=600,
/// must-revalidate`: an account's own data, which the server says no shared cache may keep.
///
/// Promised (CachingResponses.md): "a response to a request that carries `Authorization` … is
/// kept only when it says it may be shared (`public`, `must-revalidate`, `s-maxage`), as a
/// shared cache would: a cache on disk can outlast the account that filled it" (and `HTTPCache`'s
/// own documentation says the same). A shared cache keeps no response that says `private`
/// (RFC 9111 §3: "the `private` response directive … does not appear in the response, if the
/// cache is shared"; §5.2.2.7); `must-revalidate` lets a shared cache keep a signed response
/// only if it may keep it at all (§3.5).
///
/// What goes wrong: `CacheRules.mayKeep` asks a credentialed response for `public`,
/// `must-revalidate` or `s-maxage` and never looks for `private`: the response that said it is
/// the account's alone is kept (on disk, in the cache's directory) and answers the next request.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PrivateSignedAnswerAttackTests {
    @Test(arguments: [false, true]) func aSignedAnswerThatSaysPrivateIsNotKept(onDisk: Bool) async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let answer = RawServer.Connection.response("alice's orders",
                                                           headers: "Cache-Control: private, max-age=600, must-revalidate\r\nETag: \"o1\"\r\n")
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let directory = URL(fileURLWithPath: "/tmp/attack87-private-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(commonHeaders: ["Authorization": "Bearer alice-token"], timeout: 20,
                                                              retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        let first: Response = try await api.request(route: .get(server.baseURL + "/orders")).value
        #expect(first.cacheOutcome == .miss)
        let second: Response = try await api.request(route: .get(server.baseURL + "/orders")).value
        #expect(second.cacheOutcome == .miss, "a signed answer that said private was kept and answered: \(String(describing: second.cacheOutcome))")
        #expect(requests.items.count == 2)
        #expect(cache.byteCount == 0, "the cache holds \(cache.byteCount) bytes")
        if onDisk {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            let kept = files.filter { (try? Data(contentsOf: directory.appendingPathComponent($0)))?.range(of: Data("alice's orders".utf8)) != nil }
            #expect(kept.isEmpty, "written to disk: \(kept)")
        }
    }
}
