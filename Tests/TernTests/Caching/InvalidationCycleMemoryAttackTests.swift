// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
@testable import TernTransport
import TernTesting

/// A long-lived client whose cache keeps an answer, then forgets it (a `POST` to the same URL
/// invalidates it, RFC 9111 §4.4), then keeps the next: the cache's record of uses grows by one
/// for every answer kept, and nothing takes it back while the cache is under its limit.
/// Measured in a child process of its own (an exit test).
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct InvalidationCycleMemoryAttackTests {
    /// `CachingResponses.md`: "past `maximumBytes` in all, the responses used longest ago go, at
    /// a constant cost per response however many the cache holds", and `HTTPCache`'s "A cache in
    /// memory, of at most `maximumBytes`". `CacheStore.keep` appends each kept answer to
    /// `useOrder`; `remove` (what an unsafe method's invalidation, a `no-store` answer or a
    /// damaged file calls) drops the entry but not its use, and only `find` of a present entry,
    /// or eviction past the limit, ever trims `useOrder`. A feed read with `GET`, posted to,
    /// read again — one entry at a time, far under the limit — grows the cache's memory with
    /// every round: a million rounds, about 100 MiB for a cache that holds one small answer.
    @Test func keepingAndForgettingOneAnswerHoldsNoMoreMemoryOverTime() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let cache = HTTPCache(maximumBytes: 1 << 20)
                let now = Date()
                let response = CachedResponse(url: "http://127.0.0.1:1/feed", status: 200, headers: ["cache-control": "max-age=60"],
                                              body: Data("[]".utf8), requestDate: now, responseDate: now, varying: [:])
                for _ in 0..<10_000 {
                    cache.store(response)
                    cache.remove([response.url])
                }
                let before = try residentBytes("VmRSS")
                for _ in 0..<1_000_000 {
                    cache.store(response)
                    cache.remove([response.url])
                }
                let grown = try residentBytes("VmRSS") - before
                withExtendedLifetime(cache) { print(grown) }
            }
        }
        let grown = child.flatMap { Int(String(decoding: $0.standardOutputContent, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(grown.map { $0 < 8 << 20 } == true,
                "a million answers kept and forgotten, one at a time: resident memory grew \(grown.map { "\($0 >> 20) MiB" } ?? "?"); the child printed \(child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } ?? "nothing")")
    }
}
#endif
