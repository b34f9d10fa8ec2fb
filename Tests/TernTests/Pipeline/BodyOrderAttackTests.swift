import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// A body out of its place: a chunk before the head, chunks, progress and heads after the end.
/// What came out of place changes nothing the user sees once the request has settled: no
/// progress report past the body, no line that was not the body's, no plugin event.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct BodyOrderAttackTests: EarlyAnswerAttack {
    /// A step that notes that the transport has reported everything before it.
    static func played(_ done: Recorder<Bool>) -> Step {
        let hook = Hook()
        hook.set { done.append(true) }
        return .run(hook)
    }

    /// The reports `promise` made, once it settled and its transport reported everything; the
    /// reports are delivered on `queue`, flushed by then.
    static func reports<Value: Sendable>(of promise: Promise<Value>, on queue: DispatchQueue, _ seen: Recorder<TransferProgress>,
                                         after done: Recorder<Bool>) async -> [TransferProgress] {
        await settlesOnceTyped(promise)
        #expect(await eventually(timeout: 10) { !done.items.isEmpty }, "the transport did not play to the end")
        queue.sync {}
        return seen.items
    }

    /// Reads `url` as `reading` says, with its progress reported on a queue of its own.
    static func progress(of reading: Reading, api: AbstractAPI, in directory: URL, done: Recorder<Bool>,
                         parameters: (any RequestParameters)? = nil) async -> [TransferProgress] {
        let queue = DispatchQueue(label: "tern.test.progress")
        let seen = Recorder<TransferProgress>()
        switch reading {
        case .request:
            let promise: Promise<String> = api.request(route: .put(url), parameters: parameters)
            return await reports(of: promise.onProgress(in: queue) { seen.append($0) }, on: queue, seen, after: done)
        case .download:
            let promise = api.download(route: .get(url), to: directory.appendingPathComponent("file"))
            return await reports(of: promise.onProgress(in: queue) { seen.append($0) }, on: queue, seen, after: done)
        case .stream, .streamWithPlugin:
            let stream = api.stream(route: .get(url))
            stream.response.onProgress(in: queue) { seen.append($0) }
            _ = try? await within { for try await _ in stream {} }
            return await reports(of: stream.response, on: queue, seen, after: done)
        }
    }

    /// A second end, a failed end, or a head after the end: plugins hear of one attempt, once.
    @Test(arguments: [Step.end(), .end(.networkConnectionLost), .head(500)], Reading.allCases)
    func anEventAfterTheEndTellsPluginsNothing(late: Step, reading: Reading) async throws {
        let watching = Watching()
        let done = Recorder<Bool>()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: [watching])
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, unruly: true, [.head(200), .chunk("a\n"), .end(), late, Self.played(done)]),
                                  configuration) { api, _ in
                _ = await Self.progress(of: reading, api: api, in: directory, done: done)
            }
        }
        let expected = ["willSend", "didReceive"] + (reading == .stream || reading == .streamWithPlugin ? ["didEndStream"] : [])
        var heard: [String] { watching.events.items.filter { $0 != "opened" } }
        // A stream's end is told once its transfer has ended, which may be just after the reader
        // saw it (as PluginEvent says); then nothing more comes.
        #expect(await eventually { heard.count >= expected.count }, "\(heard)")
        try await Task.sleep(for: .milliseconds(50))
        #expect(heard == expected, "\(heard)")
    }

    /// A chunk after the end is not read, where the head is judged as it comes (with a plugin
    /// judging it elsewhere, it is: a break).
    @Test(arguments: [Reading.request, .download, .stream]) func aChunkAfterTheEndIsNotRead(reading: Reading) async throws {
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, unruly: true, [.head(200), .chunk("a\n"), .end(), .chunk("late\n")])) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                #expect(read.flatMap { try? $0.get() } == "a\n", "\(String(describing: read))")
            }
        }
    }
}
