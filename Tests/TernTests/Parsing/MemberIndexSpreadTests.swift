import Foundation
import Testing
@testable import Tern

/// Names as APIs write them spread over the member index: the longest run an insertion passes
/// stays far below the longest probe, which would leave their documents to `JSONDecoder`.
/// (The hash once left its low bits blind to a name's seventh and eighth bytes: 100 names from
/// `field_10` on made a run of 89.)
@Suite(.onTestThreads) struct MemberIndexSpreadTests {
    @Test(arguments: ["field_%d", "f%d", "user.%d.name", "%d", "item-%08d", "a%dz", "X_%d_Y_A_LONGER_PREFIX"])
    func ordinaryNamesSpreadOverTheIndex(pattern: String) {
        for count in [100, 1_000, 10_000] {
            var slots = MemberIndex.slots(for: count)
            var longest = 0
            for index in 0..<count {
                let hash = Array(String(format: pattern, index).utf8).withUnsafeBytes { NameHash.of($0).hash }
                longest = max(longest, MemberIndex.run(from: hash, in: slots))
                #expect(MemberIndex.insert(index, hash: hash, into: &slots))
            }
            #expect(longest < MemberIndex.longestProbe / 2, "\(pattern), \(count) names: a run of \(longest)")
        }
    }
}
