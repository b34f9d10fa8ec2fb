import Foundation
import Testing
import Tern
import TernTesting

/// Another recorder of the same file (another process's: here a thread, whose `flock` on its
/// own descriptor excludes this process's as another process's would) that writes again and
/// again: each time this recorder gets the lock, the file it locked has been replaced, and it
/// must take the lock on the new one. However many times it loses that race, it must not write
/// without the lock: a write without it drops what the other recorder added meanwhile, or the
/// other's next write drops this one's exchange. (The likely cause of a flake of
/// `RecordingAcrossProcessesTests` seen once under load, whose child runs at a lower priority:
/// one entry of 200 lost.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingLockStarvationAttackTests {
    /// How many times the other recorder replaces the file; over the 100 tries after which
    /// the recorder gave up on the lock.
    static let rounds = 200

    /// The archive the other recorder writes at `round`: its entries of rounds 0 to `round`.
    static func archive(upTo round: Int) -> Data {
        Data(RecordingTransportTests.archive(entries: (0...round).map { RecordingTransportTests.entry("GET", "https://shop.example/other/\($0)", body: "x") }).utf8)
    }

    /// `data` put in place of the file at `path` as a recorder does (a new file renamed over
    /// it), locked before it is in place: the descriptor holding its lock.
    static func replace(_ path: String, with data: Data, round: Int) throws -> Int32 {
        let new = path + ".other-\(round)"
        try data.write(to: URL(fileURLWithPath: new))
        let descriptor = open(new, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0, rename(new, path) == 0 else { throw POSIXError(.EIO) }
        return descriptor
    }

    /// The other recorder: holds the lock on the file in place from the first round to the
    /// last, each round replacing the file (its new one locked first) and then letting go of
    /// the one replaced, so that whoever waited on that one finds it replaced. It pauses 20 ms
    /// a round, so that the recorder comes back to wait on each new file; about 4 s in all.
    final class OtherRecorder: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)

        init(path: String, first descriptor: Int32) {
            Thread.detachNewThread { [done] in
                var held = descriptor
                for round in 1...RecordingLockStarvationAttackTests.rounds {
                    usleep(20_000)
                    guard let next = try? RecordingLockStarvationAttackTests.replace(path, with: RecordingLockStarvationAttackTests.archive(upTo: round), round: round)
                    else { break }
                    _ = close(held)   // lets go of the lock on the file replaced
                    held = next
                }
                _ = close(held)
                done.signal()
            }
        }
    }

    /// The recorder waits its turn behind the other for as long as the other writes, then adds
    /// its exchange to all the other's entries. Before, after 100 tries it wrote without the
    /// lock, and the other's next write, made from what the other had read under its lock,
    /// dropped the exchange.
    @Test
    func aRecorderThatLosesTheRaceForTheLockManyTimesLosesNoEntry() async throws {
        let folder = try newFolder("tern-har-starved-")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("session.har")
        let other = OtherRecorder(path: file.path, first: try Self.replace(file.path, with: Self.archive(upTo: 0), round: 0))
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try RecordingTransport(file: file, mode: .missing, upstream: stubs), responseQueue: .global())
        let _: Data = try await api.request(route: .get("https://shop.example/mine")).value
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                other.done.wait()
                continuation.resume()
            }
        }
        let urls = Set(try recordedEntries(in: file).compactMap { ($0["request"] as? [String: Any])?["url"] as? String })
        let (mine, othersLast) = (urls.contains("https://shop.example/mine"), urls.contains("https://shop.example/other/\(Self.rounds)"))
        #expect(mine, "the exchange was lost")
        #expect(othersLast, "the other's last entry was lost")
        #expect(urls.count == Self.rounds + 2)
    }
}
