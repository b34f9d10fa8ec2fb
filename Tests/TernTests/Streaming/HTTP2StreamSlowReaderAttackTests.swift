// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// Slow readers of endless event streams over HTTP/2 (libcurl 7.88), the server sending as fast
/// as flow control lets it: two streams on one connection (streams share the stream loop's),
/// the first read five events a tenth of a second apart, the other one, then none. A stream
/// that stays open beside them keeps libcurl reading the connection, so the floods fill their
/// windows; then rounds of siblings go: four streams on the same connection and four JSON
/// requests (on the requests' loop) each. No sibling stalls behind a paused stream; the pause
/// holds the server back (libcurl grants a paused stream no more window, and the siblings let
/// in nothing more); the events read afterwards follow on, none lost; a cancel
/// settles its stream once, typed, resets that stream alone, and the connection goes on.
///
/// Known issue: what a paused stream holds is libcurl's whole stream window, 32 MiB, not the
/// stream's ceiling (four times its 1 MiB buffer) as over HTTP/1.1, where TCP holds the server
/// back: libcurl 7.88 opens each stream with a 32 MiB window, and a pause only stops it granting
/// more. Any other transfer open on the connection, even an idle stream, keeps libcurl reading
/// it, so each paused stream fills its window in libcurl's memory (`HTTP2StreamDropAttackTests`
/// sees one fill its 32 MiB beside an idle stream): two paused streams let in 64 MiB, and the
/// child's resident memory grew by 134 MiB (three: 96 MiB and 200 MiB). Tern cannot shrink libcurl's window (7.88 has no option for it); sending streams
/// over HTTP/1.1 would, at the cost of a connection each.
///
/// In a child process (an exit test), which measures its own peak.
@Suite(.onTestThreads, .exitTest, .enabled(if: TestTransport.isCurl, "HTTP/2 is libcurl's alone on Linux"))
struct HTTP2StreamSlowReaderAttackTests {
    /// libcurl 7.88's window for each HTTP/2 stream (`HTTP2_HUGE_WINDOW_SIZE`).
    static let curlStreamWindow = 32 << 20
    /// The paused streams.
    static let floods = 2
    /// What the server may send past what the readers took if each stream held no more than its
    /// ceiling (4 MiB), and the relay and sockets between another 16 MiB: what HTTP/1.1 holds.
    static let ceilingAhead = floods * (4 << 20) + (16 << 20)
    /// How far above its resident memory before the streams the child may peak, by that measure.
    static let ceilingGrowth = 64 << 20

    struct Item: Decodable, Equatable {
        let name: String
    }

    /// How many rounds of siblings go while the floods are paused.
    static let rounds = 2

    /// Eight siblings at once, four streams and four JSON requests: how many were answered
    /// right. No timing assertion: a stall shows as fewer (they have 20 s to complete).
    static func siblingRound(_ round: Int, api: AbstractAPI, url: String) async -> Int {
        let siblings = Task.onTestThreads { () -> Int in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for number in 0..<8 {
                    group.addTask {
                        if number.isMultiple(of: 2) {
                            var lines: [String] = []
                            for try await line in api.stream(route: .get(url + "/sibling\(round)-\(number)")).lines { lines.append(line) }
                            return lines == [#"{"name":"sibling"}"#]
                        }
                        let item: Item = try await api.request(route: .get(url + "/item\(round)-\(number)")).value
                        return item == Item(name: "sibling")
                    }
                }
                var answered = 0
                for try await right in group where right { answered += 1 }
                return answered
            }
        }
        let watchdog = Task.onTestThreads {
            try await Task.sleep(for: .seconds(20))
            siblings.cancel()
        }
        defer { watchdog.cancel() }
        return (try? await siblings.value) ?? 0
    }

    /// The scenario, run in the child: what it saw, a line each, `key value...`.
    static func run(pausedToo extra: Int) async throws -> [String] {
        var report: [String] = []
        var plans: [Int: HTTP2StreamServer.Plan] = [:]
        for number in 1...(1 + extra) { plans[number] = .flood }
        plans[2 + extra] = .events("data: open\n\n", ends: false)
        let server = try HTTP2StreamServer(plans: plans)
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let before = try residentBytes("VmRSS")
        let flood = api.stream(route: .get(server.url + "/flood"))
        var events = flood.events.makeAsyncIterator()
        var ids: [Int] = []
        var dataBytes = 0
        func take(_ count: Int) async throws {
            for _ in 0..<count {
                guard let event = try await events.next() else { return }
                ids.append(Int(event.lastEventID) ?? -1)
                dataBytes += event.data.utf8.count
            }
        }
        // The slow reader: a few events, some apart.
        for _ in 0..<5 {
            try await take(1)
            try await Task.sleep(for: .milliseconds(100))
        }
        // Other floods on the connection, each read one event then left paused.
        var others: [ResponseSequence<ServerSentEvent>.Iterator] = []
        for number in 0..<extra {
            var iterator = api.stream(route: .get(server.url + "/flood\(number)")).events.makeAsyncIterator()
            report.append("other \(try await iterator.next()?.lastEventID ?? "none")")
            others.append(iterator)
        }
        // A stream that stays open keeps libcurl reading the connection: the floods fill their
        // windows (a paused stream alone on a connection would hold the server back sooner).
        let open = api.stream(route: .get(server.url + "/open"))
        var openEvents = open.events.makeAsyncIterator()
        report.append("open \(try await openEvents.next()?.data ?? "none")")
        // Then none: the server is held back once what it sent stops growing: at once when the
        // floods' windows are full, after ten seconds of quiet if short of that (a pause that
        // held back sooner), or not, in a minute (the child shares the machine with the others).
        func settled() async -> Int {
            var last = -1
            var steady = 0
            func isHeld() -> Bool { steady >= 50 || (steady >= 4 && last >= floods * curlStreamWindow) }
            for _ in 0..<300 where !isHeld() {
                try? await Task.sleep(for: .milliseconds(200))
                let now = server.flooded
                steady = now == last ? steady + 1 : 0
                last = now
            }
            return isHeld() ? last : -1
        }
        let heldAt = await settled()
        report.append("held \(heldAt)")
        // Siblings while the floods are paused, in rounds: streams on their connection, requests
        // on the other. The floods' windows are spent: the rounds let in nothing more.
        var answered = 0
        for round in 0..<rounds {
            answered += await siblingRound(round, api: api, url: server.url)
        }
        report.append("siblings \(answered)")
        report.append("heldAfterSiblings \(await settled())")
        report.append("residentAfterSiblings \(try residentBytes("VmRSS") - before)")
        report.append("read \((ids.count + extra) * 1024)")
        // The reader goes on: the events follow on from where it stopped.
        try await take(200)
        report.append("consecutive \(ids == Array(1...ids.count))")
        report.append("peak \(try residentBytes("VmHWM") - before)")
        // The reader leaves: its stream ends cancelled, once, typed; its stream alone is reset.
        flood.cancel()
        var ending = "none"
        do {
            while try await events.next() != nil {}
            ending = "ended"
        } catch let error as APIError {
            if case .cancelled = error { ending = "cancelled" } else { ending = "\(error)" }
        } catch {
            ending = "untyped \(error)"
        }
        report.append("ending \(ending)")
        // The connection goes on for another stream.
        var after: [String] = []
        for try await line in api.stream(route: .get(server.url + "/after")).lines { after.append(line) }
        report.append("after \(after == [#"{"name":"sibling"}"#])")
        let floodStream = server.requests.first?.stream ?? 0
        let reset = await eventually(timeout: 5) { server.resets.contains(floodStream) }
        report.append("reset \(reset) \(server.resets.count)")
        // Their iterators kept the other floods and the open stream open until here.
        withExtendedLifetime((others, openEvents)) { open.cancel() }
        let streamConnection = server.requests.first?.connection ?? -1
        let siblingStreams = server.requests.filter { $0.connection == streamConnection }.count
        report.append("connections \(server.connections) sharing \(siblingStreams)")
        report.append("windows \(server.clientInitialWindows.map(String.init).joined(separator: ","))")
        return report
    }

    @Test func aPausedHTTP2StreamHoldsTheServerBackAndStallsNoSibling() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                for line in try await HTTP2StreamSlowReaderAttackTests.run(pausedToo: HTTP2StreamSlowReaderAttackTests.floods - 1) { print(line) }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = Dictionary(printed.split(separator: "\n").map { line -> (String, [String]) in
            let words = line.split(separator: " ").map(String.init)
            return (words.first ?? "", Array(words.dropFirst()))
        }, uniquingKeysWith: { first, _ in first })
        func number(_ key: String) -> Int { lines[key]?.first.flatMap { Int($0) } ?? -1 }
        let (read, held, heldAfter, peak) = (number("read"), number("held"), number("heldAfterSiblings"), number("peak"))
        #expect(lines["open"] == ["open"], "\(printed)")
        // The pause holds: the floods filled their windows (what Tern's buffers took before
        // pausing came back as window), and the siblings let in nothing more.
        #expect(held >= 0, "the server was never held back: \(printed)")
        #expect(heldAfter == held, "the siblings let in more: \(printed)")
        #expect(heldAfter - read <= Self.floods * (Self.curlStreamWindow + (4 << 20)), "\(printed)")
        #expect(peak > 0 && peak < Self.floods * 3 * Self.curlStreamWindow, "peak grew \(peak >> 20) MiB: \(printed)")
        #expect(lines["siblings"] == [String(8 * Self.rounds)], "\(printed)")
        #expect(lines["consecutive"] == ["true"], "\(printed)")
        #expect(lines["ending"] == ["cancelled"], "\(printed)")
        #expect(lines["after"] == ["true"], "\(printed)")
        #expect(lines["reset"] == ["true", "1"], "\(printed)")
        // One connection for the streams, one for the requests: on the first, the floods, the
        // open stream, four streams a round, and the one after.
        #expect(lines["connections"] == ["2", "sharing", String(Self.floods + 1 + 4 * Self.rounds + 1)], "\(printed)")
        withKnownIssue("libcurl 7.88 lets a paused HTTP/2 stream fill its 32 MiB window") {
            #expect(heldAfter - read < Self.ceilingAhead, "\((heldAfter - read) >> 20) MiB ahead: \(printed)")
            #expect(peak < Self.ceilingGrowth, "peak grew \(peak >> 20) MiB: \(printed)")
        }
    }
}
#endif
