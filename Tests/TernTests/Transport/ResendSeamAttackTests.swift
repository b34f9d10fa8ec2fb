#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern

/// libcurl sending a request again by itself (a kept connection the server closed as the
/// request arrived, unanswered: ``ResendingTests``), met by what else can end or watch an
/// attempt at that moment: a cancel, the request's timeout, the idle timeout. The server holds
/// the second connection, or reads the body sent again slowly. Each request settles once, with
/// the error its cause names; a PUT goes twice, never a third time.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResendSeamAttackTests {
    /// What the second connection does with the request sent again on it.
    enum Second {
        /// Reads it whole and answers with its body's length.
        case answers
        /// Reads it whole and says nothing until the client hangs up.
        case holds
    }

    /// Answers the first request (a GET) on the first connection, reads the second whole and
    /// hangs up unanswered; on the second, does what `second` says; on any later one, answers
    /// each request with its body's length. Records each
    /// request line with its connection and body length.
    static func server(heard: Recorder<String>, second: Second) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.components(separatedBy: "\r\n").first ?? ""
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                heard.append("\(connection.index) \(line) \(body.utf8.count)")
                if connection.index == 0 {
                    if heard.items.count == 2 { return }   // hangs up unanswered
                    guard connection.send(RawServer.Connection.response("first")) else { return }
                    continue
                }
                guard connection.index > 1 || second == .answers else {
                    while connection.readHead() != nil {}
                    return
                }
                guard connection.send(RawServer.Connection.response("\(body.utf8.count)")) else { return }
            }
        }
    }

    /// An API over libcurl whose requests are not retried by Tern, and whose first GET has
    /// made the connection that the next request reuses.
    static func warmedAPI(_ server: RawServer, timeout: TimeInterval = 30, idle: TimeInterval? = nil) async throws -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: timeout, idleTimeout: idle, retryPolicy: .never),
                              transport: try CurlTransport(), responseQueue: .global())
        let first: String = try await api.request(route: .get(server.baseURL + "/first")).value
        #expect(first == "first")
        return api
    }

    /// A body that comes slowly from its stream (pieces 100 ms apart, 3 s in all), against an
    /// idle timeout of 1.5 s: sent again whole on the second connection, it moves all the time,
    /// and is answered. Before the fix the second send reported nothing (only bytes past the
    /// first's count were reported), so the attempt looked idle while its body went.
    @Test func aSlowBodySentAgainIsNotIdle() async throws {
        let heard = Recorder<String>()
        let server = try Self.server(heard: heard, second: .answers)
        defer { server.stop() }
        let (piece, pieces) = (1_000, 30)
        let api = try await Self.warmedAPI(server, idle: 1.5)
        let upload = BodyParameters(length: Int64(piece * pieces), contentType: "application/octet-stream") {
            IdleTimeoutTests.SlowStream(pieces: pieces, of: piece, every: 100)
        }
        let progress = Recorder<Int64>()
        let promise: Promise<String> = api.request(route: .put(server.baseURL + "/items"), parameters: upload)
            .onProgress { if $0.direction == .upload { progress.append($0.completedBytes) } }
        let result = await promise.result
        #expect((try? result.get()) == "\(piece * pieces)", "\(result); the server heard \(heard.items)")
        #expect(heard.items == ["0 GET /first HTTP/1.1 0", "0 PUT /items HTTP/1.1 \(piece * pieces)", "1 PUT /items HTTP/1.1 \(piece * pieces)"])
        // What the caller hears of the upload never goes back, nor past its length.
        let reports = progress.items
        #expect(reports == reports.sorted() && (reports.last ?? 0) <= Int64(piece * pieces), "\(reports)")
    }

    /// How the request held on its second connection is ended.
    enum Ending: String, CaseIterable, Sendable {
        /// The caller cancels it once the server has read it the second time.
        case cancel
        /// Its own timeout.
        case timeout
        /// The idle timeout: nothing moves on the second connection once the body went.
        case idle
    }

    /// A PUT with a body from memory, sent again on a second connection that the server reads
    /// and then holds: whatever ends it (a cancel, its timeout, the idle timeout) settles it
    /// once, with that cause's error; it went out twice, never a third time, and the API
    /// answers the next request.
    @Test(arguments: Ending.allCases)
    func aRequestHeldOnItsSecondConnection(ending: Ending) async throws {
        let heard = Recorder<String>()
        let server = try Self.server(heard: heard, second: .holds)
        defer { server.stop() }
        let api = try await Self.warmedAPI(server, timeout: ending == .timeout ? 2.5 : 30, idle: ending == .idle ? 1.5 : nil)
        let body = String(repeating: "x", count: 10_000)
        let promise: Promise<String> = api.request(route: .put(server.baseURL + "/items"),
                                                    parameters: BodyParameters(Data(body.utf8), contentType: "text/plain"))
        if ending == .cancel {
            #expect(await eventually(timeout: 20) { heard.items.count == 3 }, "\(heard.items)")
            promise.cancel()
        }
        let error = await apiError(of: promise)
        switch ending {
        case .cancel: #expect(error?.caseName == "cancelled", "\(String(describing: error))")
        case .timeout: #expect(error?.caseName == "timeout", "\(String(describing: error))")
        case .idle: #expect(IdleTimeoutTests.isIdle(error), "\(String(describing: error))")
        }
        #expect(heard.items == ["0 GET /first HTTP/1.1 0", "0 PUT /items HTTP/1.1 10000", "1 PUT /items HTTP/1.1 10000"])
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "0")
    }

    /// Three kept connections, each of which the server closes as the next request arrives on
    /// it, unanswered: a POST goes out once and fails typed (the guard refuses every second
    /// connection libcurl picks); a PUT goes out whole each time libcurl sends it again (once
    /// on each kept connection: a PUT may go more than twice), and is answered on a new one.
    @Test(arguments: ["POST", "PUT"])
    func everyKeptConnectionClosesAsTheRequestArrives(method: String) async throws {
        let heard = Recorder<String>()
        let gets = NSCondition()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.components(separatedBy: "\r\n").first ?? ""
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                heard.append("\(connection.index) \(line) \(body.utf8.count)")
                if line.hasPrefix("GET /warm") {
                    // Each GET waits for the other two, so that each has a connection of its own.
                    gets.lock()
                    gets.broadcast()
                    let deadline = Date().addingTimeInterval(20)
                    while heard.items.count < 3, gets.wait(until: deadline) {}
                    gets.unlock()
                } else if connection.index < 3 {
                    return   // hangs up unanswered
                }
                guard connection.send(RawServer.Connection.response("\(body.utf8.count)")) else { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: try CurlTransport(), responseQueue: .global())
        let warm: [Promise<String>] = (0..<3).map { _ in api.request(route: .get(server.baseURL + "/warm")) }
        for promise in warm { #expect(try await promise.value == "0") }
        #expect(server.connections == 3)
        let body = String(repeating: "y", count: 5_000)
        let route: Route = method == "PUT" ? .put(server.baseURL + "/items") : .post(server.baseURL + "/items")
        let result = await (api.request(route: route, parameters: BodyParameters(Data(body.utf8), contentType: "text/plain")) as Promise<String>).result
        let sends = heard.items.filter { $0.contains(" /items ") }
        if method == "PUT" {
            #expect((try? result.get()) == "5000", "\(result); the server heard \(heard.items)")
            #expect(sends.allSatisfy { $0.hasSuffix(" 5000") } && sends.count >= 2, "\(sends)")
            // libcurl 7.88 tries each kept connection in turn, then a new one: four sends here.
            #expect(Set(sends.map { $0.prefix(2) }).count == sends.count, "\(sends)")
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result); the server heard \(heard.items)")
                return
            }
            #expect(failure.urlError?.code == .networkConnectionLost, "\(failure)")
            #expect(sends.count == 1, "\(sends)")
        }
    }
}
#endif
