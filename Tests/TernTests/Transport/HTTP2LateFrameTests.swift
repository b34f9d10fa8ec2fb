#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// HTTP/2 over libcurl: frames a server sends on a connection the client holds idle, after the
/// answer it asked for (a GOAWAY, frames on the closed stream or on one the client never
/// opened). The requests after them each get their own answer, on that connection or a new one,
/// and none is failed for what came before it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2LateFrameTests {
    static let body = Data(#"[{"name":"tern"}]"#.utf8)

    /// GOAWAY's payload: the last stream the server will handle, and an error code.
    static func goAway(lastStream: UInt32, error: UInt32) -> Data {
        Data([UInt8(lastStream >> 24), UInt8(lastStream >> 16 & 0xff), UInt8(lastStream >> 8 & 0xff), UInt8(lastStream & 0xff),
              UInt8(error >> 24), UInt8(error >> 16 & 0xff), UInt8(error >> 8 & 0xff), UInt8(error & 0xff)])
    }

    /// What each case sends after the first answer, and whether the connection must be left
    /// for a new one (a GOAWAY says it is).
    static let lateFrames: [(name: String, frames: [(type: HTTP2Server.Kind, flags: UInt8, stream: UInt32?, payload: Data)], newConnection: Bool)] = [
        ("GOAWAY, no error", [(.goAway, 0, 0, goAway(lastStream: 1, error: 0))], true),
        ("GOAWAY, protocol error", [(.goAway, 0, 0, goAway(lastStream: 1, error: 1))], true),
        ("a body on the closed stream", [(.data, 0x1, nil, Data(#"[{"name":"stray"}]"#.utf8))], false),
        ("a second answer on the closed stream", [(.headers, 0x5, nil, Data([0x88]))], false),
        ("an answer on a stream never opened", [(.headers, 0x4, 2, Data([0x88])), (.data, 0x1, 2, Data(#"[{"name":"stray"}]"#.utf8))], false),
        ("a reset of the closed stream", [(.reset, 0, nil, Data([0, 0, 0, 2]))], false),
    ]

    struct Item: Codable, Equatable {
        let name: String
    }

    @Test(arguments: lateFrames.indices) func lateFramesOnAnIdleConnectionAreNoLaterRequestsAnswer(_ index: Int) async throws {
        let (name, frames, newConnection) = Self.lateFrames[index]
        let server = try HTTP2Server(answering: Self.body, misbehaving: [1: .answerThenLate(frames)])
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let first: [Item] = try await api.request(route: .get(server.url + "/first")).value
        #expect(first == [Item(name: "tern")], "\(name)")
        #expect(await eventually { server.lateSent == 1 }, "\(name)")
        try await Task.sleep(for: .milliseconds(20))
        for next in 0..<3 {
            let answer = await (api.request(route: .get(server.url + "/next\(next)")) as Promise<[Item]>).result
            guard case .success(let items) = answer else {
                Issue.record("\(name): request \(next) after it failed: \(answer)")
                continue
            }
            #expect(items == [Item(name: "tern")], "\(name)")
        }
        // Stray frames can end the connection as the next request goes out on it: that request,
        // unanswered, is sent again at once on a new connection (as RetriesAndRedirects says),
        // and the server sees it twice. (Once in CI's sanitized run, for a stream never opened.)
        let resent = server.requests.count == 5 && server.connections == 2
        #expect(server.requests.count == 4 || resent, "\(name): \(server.requests.count) requests on \(server.connections) connections")
        if newConnection { #expect(server.connections == 2, "\(name)") }
    }

    /// A request that goes out on a kept connection as the server's GOAWAY comes the other way,
    /// on a stream past the GOAWAY's last: the server did not take it. One whose method may be
    /// sent twice is sent again on a new connection, its body from the start, and answered; a
    /// POST fails as connection lost, and is not sent again unasked (libcurl's error does not
    /// say which stream the GOAWAY named), as over HTTP/1.1.
    @Test(arguments: [HTTPMethod.get, .delete, .put, .post]) func aRequestThatCrossedAGoAwayIsSentAgainWhenItMayBe(_ method: HTTPMethod) async throws {
        let server = try HTTP2Server(answering: Self.body, misbehaving: [2: .goAway])
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let first: [Item] = try await api.request(route: .get(server.url + "/first")).value
        #expect(first == [Item(name: "tern")])
        let body = method == .put || method == .post ? JSONParameters(Item(name: String(repeating: "x", count: 5_000))) : nil
        let crossing = await (api.request(route: Route(method: method, url: server.url + "/crossing"), parameters: body) as Promise<[Item]>).result
        let sent = try body.map { try JSONEncoder().encode($0.value) } ?? Data()
        if HTTPMethod.idempotent.contains(method) {
            #expect((try? crossing.get()) == [Item(name: "tern")], "\(crossing)")
            #expect(server.requests.count == 3 && server.connections == 2, "\(server.requests.count) requests on \(server.connections) connections")
            #expect(server.requests.dropFirst().map(\.body) == [sent, sent])
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = crossing else {
                Issue.record("\(crossing)")
                return
            }
            #expect((failure.underlying as? URLError)?.code == .networkConnectionLost, "\(failure)")
            #expect("\(failure)".contains("not sent again unasked"), "\(failure)")
            #expect(failure.statusCode == nil)
            #expect(server.requests.count == 2)
        }
    }
}
#endif
