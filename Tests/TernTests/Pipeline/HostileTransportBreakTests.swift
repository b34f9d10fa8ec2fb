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

    /// Holds the judging of a stream's 200 head (plugins hear of it as it opens the stream)
    /// until the transport has reported everything: what came after the end waits with the end.
    struct HoldsTheHead: Plugin {
        let done: Recorder<Bool>

        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .didReceive(.success(let response), _) = event, response.statusCode == 200 else { return }
            let deadline = Date().addingTimeInterval(5)
            while done.items.isEmpty, Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        }
    }

    /// The stream's lines, read within 10 s, or the error that ended them.
    static func readLines(_ api: AbstractAPI) async throws -> Result<[String], APIError>? {
        try await within {
            do {
                var lines: [String] = []
                for try await line in api.stream(route: .get(Self.url)).lines { lines.append(line) }
                return .success(lines)
            } catch let error as APIError {
                return .failure(error)
            }
        }
    }

    /// What came after the end, while a plugin judged the head (perhaps of a retry, the first
    /// attempt's connection lost before its head): the end was kept for after the judging, and
    /// a chunk after it became the stream's last line, a head after it failed a whole stream
    /// with `badServerResponse` (without a plugin, both are ignored).
    @Test(arguments: [Step.chunk("late\n"), .head(200)], [false, true])
    func whatComesAfterTheEndChangesNothingWhenTheHeadIsJudgedElsewhere(late: Step, retried: Bool) async throws {
        let done = Recorder<Bool>()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false),
                                             plugins: [HoldsTheHead(done: done)])
        let answer: [Step] = [.head(200), .chunk("a\n"), .end(), late, BodyOrderAttackTests.played(done)]
        try await Self.attack(Hostile(.inside, unruly: true, answers: (retried ? [[.end(.networkConnectionLost)]] : []) + [answer]),
                              configuration) { api, _ in
            let read = try await Self.readLines(api)
            #expect(read.flatMap { try? $0.get() } == ["a"], "\(String(describing: read))")
        }
    }
}
