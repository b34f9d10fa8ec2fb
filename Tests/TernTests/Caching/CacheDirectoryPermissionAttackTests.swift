// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// The disk cache's directory made unreadable, then read-only, then writable again while the
/// API runs. Permissions bind only a process that is not root (as CI runs), so it runs in a
/// child process (an exit test) that becomes `nobody` first. Every request gets its own answer
/// from the server or the cache's own, at once; nothing is served from a file it cannot read.
@Suite(.onTestThreads, .exitTest)
struct CacheDirectoryPermissionAttackTests {
    @Test func aDirectoryMadeUnreadableOrReadOnlyLeavesEveryRequestItsOwnAnswer() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                // Made as root: FoundationNetworking's URLSession traps (SIGILL, no words) when
                // made by a user who cannot reach the test binary's directory, as in a clone
                // under a private `mktemp -d`.
                let transport = TestTransport.make()
                guard setgid(65534) == 0, setuid(65534) == 0 else {
                    print("could not become nobody")
                    return
                }
                let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("tern-permission-\(UUID().uuidString)")
                defer {
                    chmod(root.appendingPathComponent("cache").path, 0o700)
                    try? FileManager.default.removeItem(at: root)
                }
                let directory = root.appendingPathComponent("cache")
                let origin = try HTTPCacheTests.Origin { request, number in
                    let path = request.split(separator: " ").dropFirst().first ?? ""
                    return HTTPCacheTests.answer("\(path) v\(number)", "Cache-Control: max-age=600\r\n")
                }
                let cache = try HTTPCache(directory: directory)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: transport,
                                      responseQueue: .global())
                func get(_ path: String) async -> String {
                    let result = await (api.request(route: .get(origin.url + path)) as Promise<Response>).result
                    switch result {
                    case .success(let response):
                        return "\(path)=\(String(decoding: response.body, as: UTF8.self))/\(response.cacheOutcome.map { "\($0)" } ?? "none")"
                    case .failure(let error):
                        return "\(path)=error:\(type(of: error))"
                    }
                }
                var outcomes = [await get("/a"), await get("/b"), await get("/a")]
                chmod(directory.path, 0)
                outcomes += [await get("/a"), await get("/c"), await get("/c")]
                chmod(directory.path, 0o500)
                outcomes += [await get("/b"), await get("/d"), await get("/d")]
                chmod(directory.path, 0o700)
                outcomes += [await get("/e"), await get("/e")]
                print(outcomes.joined(separator: "|"))
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.split(separator: "|").map(String.init) == [
            "/a=/a v0/miss", "/b=/b v1/miss", "/a=/a v0/hit",
            // Unreadable: what was kept cannot be read, and nothing can be kept.
            "/a=/a v2/miss", "/c=/c v3/miss", "/c=/c v4/miss",
            // Read-only: what is there is read; nothing new can be kept.
            "/b=/b v1/hit", "/d=/d v5/miss", "/d=/d v6/miss",
            // Writable again: kept again.
            "/e=/e v7/miss", "/e=/e v7/hit",
        ], "\(printed)")
    }
}
#endif
