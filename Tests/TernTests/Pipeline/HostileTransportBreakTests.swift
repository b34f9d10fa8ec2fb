import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// What the hostile-transport attacks of session 44 broke: each test fails on the code it was
/// written against.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct HostileTransportBreakTests: EarlyAnswerAttack {
    /// A chunk before the head is the transport's error, as a second head is: the request fails
    /// with `badServerResponse` rather than taking the chunk into its body (a request), or
    /// dropping it (a download, a stream), either way a body silently not the server's.
    @Test(arguments: Reading.allCases) func aChunkBeforeTheHeadFailsTyped(reading: Reading) async throws {
        let configuration = Self.configuration(reading)
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, unruly: true, [.chunk("early\n"), .head(200), .chunk("a\n"), .end()]), configuration) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                guard case .failure(.transportFailed(let failure))? = read else {
                    Issue.record("\(reading): \(String(describing: read))")
                    return
                }
                #expect((failure.underlying as? URLError)?.code == .badServerResponse, "\(failure)")
            }
        }
    }

    /// Chunks after the end make no progress report: the request has settled with its body,
    /// and a report past it tells the user of bytes that are not in it.
    @Test(arguments: Reading.allCases) func aChunkAfterTheEndReportsNoProgress(reading: Reading) async throws {
        let done = Recorder<Bool>()
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, unruly: true, [.head(200), .chunk("a\n"), .end(), .chunk("late\n"), BodyOrderAttackTests.played(done)])) { api, _ in
                let reports = await BodyOrderAttackTests.progress(of: reading, api: api, in: directory, done: done)
                let downloads = reports.filter { $0.direction == .download }
                #expect(downloads.allSatisfy { $0.completedBytes <= 2 }, "\(downloads.map(\.completedBytes))")
            }
        }
    }

    /// Upload progress after the end makes no report either.
    @Test func uploadProgressAfterTheEndReportsNothing() async throws {
        let done = Recorder<Bool>()
        let steps: [Step] = [.sent(10, of: 10), .head(200), .chunk("a\n"), .end(), .sent(20, of: 20), BodyOrderAttackTests.played(done)]
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, unruly: true, steps)) { api, _ in
                let reports = await BodyOrderAttackTests.progress(of: .request, api: api, in: directory, done: done,
                                                                  parameters: BodyParameters(Data(count: 10)))
                let uploads = reports.filter { $0.direction == .upload }
                #expect(uploads.allSatisfy { $0.completedBytes <= 10 }, "\(uploads)")
            }
        }
    }
}
