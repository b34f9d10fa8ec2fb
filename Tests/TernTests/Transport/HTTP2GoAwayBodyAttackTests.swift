#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// A PUT or DELETE with a body that crossed an HTTP/2 GOAWAY on a kept connection (its stream
/// past the GOAWAY's last, the connection left open) is sent again on a new connection, its
/// body read again from the start, as RetriesAndRedirects says; whether the GOAWAY reached it
/// as a refused stream (libcurl's own retry) or as `CURLE_HTTP2` (Tern's,
/// `CurlExchange.readiesToRunAgain(after:)`). (Attack52's break suite: before 1fd2ed3 it failed
/// as "not sent again unasked".)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2GoAwayBodyAttackTests {
    @Test(arguments: [HTTPMethod.put, .delete]) func anIdempotentRequestWithABodyThatCrossedAGoAwayIsSentAgainWhole(_ method: HTTPMethod) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.goAway(lastStream: request.stream - 2)
        }
        let api = try HTTP2GoAwayAttackTests.api(server)
        try await HTTP2GoAwayAttackTests.warmUp(api, server)
        let body = Data("the whole body".utf8)
        let result = await (api.request(route: Route(method: method, url: server.url + "/item"), parameters: BodyParameters(body))
                            as Promise<[HTTP2GoAwayAttackTests.Item]>).result
        let requests = server.requests
        #expect((try? result.get()) == [HTTP2GoAwayAttackTests.Item(name: "c2s1")], "\(method): \(result)")
        #expect(requests.count == 3, "\(requests)")
        if requests.count == 3 { #expect(requests[2].body == body && requests[2].connection == 2) }
    }

    /// Six PUTs with bodies that name them in flight on the kept connection; a GOAWAY with the
    /// third's stream as the last: the last three go again once each, their whole bodies read
    /// again, on new connections, however the GOAWAY reached each.
    @Test func putsWithBodiesAboveTheLastStreamAreSentAgainWhole() async throws {
        let count = 6
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.held.append(request.stream)
            guard connection.held.count == count else { return }
            let last = connection.held.sorted()[2]
            connection.goAway(lastStream: last)
            connection.held.filter { $0 <= last }.forEach(connection.answer)
        }
        let api = try HTTP2GoAwayAttackTests.api(server)
        try await HTTP2GoAwayAttackTests.warmUp(api, server)
        let bodies = (0..<count).map { Data("body \($0) ".utf8) + Data(repeating: UInt8(65 + $0), count: 2_000) }
        let promises: [Promise<[HTTP2GoAwayAttackTests.Item]>] = bodies.map { api.request(route: .put(server.url + "/item"), parameters: BodyParameters($0)) }
        var answers: [String] = []
        for promise in promises {
            switch await promise.result {
            case .success(let items): answers.append(items.map(\.name).joined())
            case .failure(let error): answers.append("\(error)")
            }
        }
        let requests = server.requests
        #expect(answers.filter { $0.hasPrefix("c1s") }.count == 3 && answers.filter { $0.hasPrefix("c") && !$0.hasPrefix("c1s") }.count == 3, "\(answers)")
        #expect(requests.count == count + 1 + 3, "\(requests)")
        // Each body whole, once on the first connection; the three sent again whole, once more.
        let onFirst = requests.filter { $0.connection == 1 && $0.stream > 1 }.map(\.body)
        let later = requests.filter { $0.connection > 1 }.map(\.body)
        #expect(Set(onFirst) == Set(bodies) && onFirst.count == count)
        #expect(Set(later).count == 3 && Set(later).isSubset(of: Set(bodies)), "\(later.map(\.count))")
    }
}
#endif
