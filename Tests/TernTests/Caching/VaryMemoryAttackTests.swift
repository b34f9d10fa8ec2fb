// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A cache in memory, fed answers whose `Vary` names thousands of fields: what it holds for
/// each is far more than what it counts against its limit. Measured in a child process of its
/// own (an exit test), as `RecordingMemoryTests` measure theirs.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct VaryMemoryAttackTests {
    static let limit = 2 << 20

    /// `HTTPCache.swift` (`init(maximumBytes:maximumResponseBytes:clock:)`): "A cache in
    /// memory, of at most `maximumBytes` (20 MiB by default)", and `CachingResponses.md`:
    /// "past `maximumBytes` in all, the responses used longest ago go". The server picks how
    /// many fields `Vary` names; the cache keeps, for each response, a digest of the request's
    /// value of every one of them ("sha256:" and 64 hex digits, in a dictionary), and counts
    /// only the `Vary` line itself. A server that answers with 6,000 short names per response
    /// makes a 2 MiB cache hold tens of MiB, growing with the answers it is sent.
    @Test func aCacheInMemoryHoldsToItsLimitWhateverVaryNames() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let vary = (0..<6000).map { "v\($0)" }.joined(separator: ",")
                let server = try LoopbackServer { _ in
                    ServerResponse(headers: ["Cache-Control": "max-age=3600", "Vary": vary, "Content-Type": "text/plain"],
                                   body: Data("ok".utf8))
                }
                defer { server.stop() }
                let cache = HTTPCache(maximumBytes: VaryMemoryAttackTests.limit)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                                      transport: TestTransport.make(), responseQueue: .global())
                let _: Response = try await api.request(route: .get(server.baseURL + "/warm")).value
                cache.removeAll()
                let before = try residentBytes("VmRSS")
                for index in 0..<160 {
                    let _: Response = try await api.request(route: .get(server.baseURL + "/item/\(index)")).value
                }
                let again: Response = try await api.request(route: .get(server.baseURL + "/item/159")).value
                guard again.cacheOutcome == .hit else {
                    print("the last answer was not kept: \(String(describing: again.cacheOutcome))")
                    exit(EXIT_FAILURE)
                }
                let grown = try residentBytes("VmRSS") - before
                withExtendedLifetime(cache) { print(grown) }
            }
        }
        let grown = child.flatMap { Int(String(decoding: $0.standardOutputContent, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(grown.map { $0 < 4 * Self.limit } == true,
                "a cache of \(Self.limit >> 20) MiB: resident memory grew \(grown.map { "\($0 >> 20) MiB" } ?? "?"); the child printed \(child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } ?? "nothing")")
    }
}
#endif
