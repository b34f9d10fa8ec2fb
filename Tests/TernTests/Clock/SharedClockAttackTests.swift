import Foundation
import Testing
@testable import Tern
import TernTesting

/// One API's clock shared by hundreds of deadlines at once: requests' timeouts from 0.3 s to
/// 30 s, retries' backoffs and streams' idle timers, against real servers that never answer some
/// requests and answer others late. The short deadlines fire typed long before the long ones,
/// nothing hangs, nothing settles twice.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(2))) struct SharedClockAttackTests: EarlyAnswerAttack {
    /// What a request's server does: never answer, answer 1.5 s late, or answer 503 at once.
    enum Kind: CaseIterable { case never, late, busy }

    static let timeouts: [TimeInterval] = [0.3, 1, 5, 30]

    /// A server whose paths say what it does: `/never` holds the request until the client
    /// leaves, `/late` answers after 1.5 s, `/busy` answers 503 at once, `/stream` sends a head
    /// and one line then nothing, `/silent` sends nothing at all.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? ""
                if path.hasPrefix("/never") || path.hasPrefix("/silent") {
                    _ = connection.readAvailable(for: 90)
                    return
                } else if path.hasPrefix("/late") {
                    connection.pause(1_500)
                    guard connection.send(RawServer.Connection.response("late")) else { return }
                } else if path.hasPrefix("/busy") {
                    guard connection.send("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy") else { return }
                } else if path.hasPrefix("/stream") {
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n") else { return }
                    _ = connection.readAvailable(for: 90)
                    return
                }
            }
        }
    }

    @Test func shortDeadlinesFireTypedAmongLongOnes() async throws {
        // Several servers, so that the per-host connection cap does not queue all of them
        // behind the requests that are never answered (queued ones time out typed all the same).
        let servers = try (0..<6).map { _ in try Self.server() }
        defer { servers.forEach { $0.stop() } }
        let configuration = APIConfiguration(timeout: 60, retryBudget: .unlimited)
        let busyRetry = RetryPolicy(maxRetries: 10_000, baseDelay: 0.05, maxDelay: 0.4)
        try await AfterTheEndRaceTests.racing(configuration) { api in
            struct Asked {
                let kind: Kind
                let timeout: TimeInterval
                let promise: Promise<String>
                let results: Recorder<Result<String, any Error>>
            }
            var askedSoFar: [Asked] = []
            for index in 0..<240 {
                let kind = Kind.allCases[(index / Self.timeouts.count) % Kind.allCases.count]
                let timeout = Self.timeouts[index % Self.timeouts.count]
                let server = servers[index % servers.count]
                let options = RequestOptions(timeout: timeout, retryPolicy: kind == .busy ? busyRetry : .never)
                let promise: Promise<String> = api.request(route: .get(server.baseURL + "/\(kind)/\(index)"), options: options)
                let results = Recorder<Result<String, any Error>>()
                promise.onResult(in: .global()) { results.append($0) }
                askedSoFar.append(Asked(kind: kind, timeout: timeout, promise: promise, results: results))
            }
            let asked = askedSoFar
            // Streams on the same clock: ones whose idle timer fires after their first line, and
            // ones whose head never comes (their 30 s deadline still ahead).
            typealias Lines = Result<[String], any Error>
            let idle = Recorder<Lines>()
            let headless = Recorder<Lines>()
            var streams: [ResponseStream] = []
            for index in 0..<24 {
                let server = servers[index % servers.count]
                let silent = index % 2 == 1
                let stream = api.stream(route: .get(server.baseURL + (silent ? "/silent/\(index)" : "/stream/\(index)")),
                                        options: RequestOptions(timeout: 30, streamIdleTimeout: silent ? 60 : 0.5))
                streams.append(stream)
                let into = silent ? headless : idle
                Task.onTestThreads {
                    do {
                        var lines: [String] = []
                        for try await line in stream.lines { lines.append(line) }
                        into.append(.success(lines))
                    } catch {
                        into.append(.failure(error))
                    }
                }
            }

            // Every request of 1 s or less times out, typed, while the 30 s ones still wait.
            let short = asked.filter { $0.timeout <= 1 }
            let settled = await eventually(timeout: 20) { short.allSatisfy { !$0.results.items.isEmpty } && idle.items.count == 12 }
            let long = asked.filter { $0.timeout == 30 && $0.kind != .late }
            let longSettled = long.filter { !$0.results.items.isEmpty }.map { "\($0.kind) \(String(describing: $0.results.items.first))" }
            let headlessEnded = headless.items.map { "\($0)" }
            #expect(settled, "unsettled: \(short.filter { $0.results.items.isEmpty }.map { "\($0.kind) \($0.timeout)" }), idle streams ended: \(idle.items.count)")
            #expect(longSettled.isEmpty, "30 s requests settled early: \(longSettled)")
            #expect(headlessEnded.isEmpty, "streams with 30 s to go ended: \(headlessEnded)")
            for request in short {
                switch request.results.items.first {
                case .failure(APIError.timeout(let timeout))?: #expect(timeout.interval == request.timeout)
                // A retry that could begin only after the deadline is not waited for: the 503 that
                // asked for it is the answer.
                case .failure(APIError.unacceptableStatus(let failure))? where request.kind == .busy: #expect(failure.statusCode == 503)
                case let other: Issue.record("\(request.kind) \(request.timeout) s: \(String(describing: other))")
                }
            }
            for ended in idle.items {
                guard case .failure(APIError.timeout) = ended else {
                    Issue.record("an idle stream ended with \(ended)")
                    continue
                }
            }

            // The late answers with time enough come, beside requests never answered and
            // retries backing off on the same clock.
            let answered = asked.filter { $0.kind == .late && $0.timeout == 30 }
            #expect(await eventually(timeout: 20) { answered.allSatisfy { !$0.results.items.isEmpty } })
            for request in answered {
                guard case .success("late")? = request.results.items.first else {
                    Issue.record("late 30 s: \(String(describing: request.results.items.first))")
                    continue
                }
            }
            let stillWaiting = long.filter { !$0.results.items.isEmpty }.map { "\($0.kind) \(String(describing: $0.results.items.first))" }
            #expect(stillWaiting.isEmpty, "30 s requests settled early: \(stillWaiting)")

            // The rest is cancelled; each settles once, typed.
            asked.forEach { $0.promise.cancel() }
            streams.forEach { $0.cancel() }
            #expect(await eventually(timeout: 30) { asked.allSatisfy { !$0.results.items.isEmpty } && headless.items.count == 12 })
            try await Task.sleep(for: .milliseconds(300))
            for request in asked {
                #expect(request.results.items.count == 1, "\(request.kind) \(request.timeout) s settled \(request.results.items.count) times")
                switch (request.results.items.first, request.kind) {
                case (.success("late")?, .late) where request.timeout >= 5: break
                case (.failure(APIError.cancelled)?, _) where request.timeout >= 5: break
                case (.failure(APIError.timeout)?, _) where request.timeout <= 5: break
                case (.failure(APIError.unacceptableStatus)?, .busy) where request.timeout <= 5: break
                case let (other, kind): Issue.record("\(kind) \(request.timeout) s: \(String(describing: other))")
                }
            }
            for ended in headless.items {
                guard case .failure(APIError.cancelled) = ended else {
                    Issue.record("a cancelled stream ended with \(ended)")
                    continue
                }
            }
        }
    }
}
