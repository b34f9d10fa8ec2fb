import Foundation
import Testing
import Tern
import TernTesting

/// A redirect recorded against a `LoopbackServer` whose `Location` is absolute, as most servers
/// write it from the request's `Host` (`http://127.0.0.1:<port>/new`), replayed in a later run,
/// where the server (or no server, in replay) is on another port. The recording answers the
/// first request on the new port, as promised, but replays the `Location` with the old port:
/// the hop that stayed at its origin when recorded now leaves it, so the redirect policy
/// decides on a cross-origin redirect (`Redirect.isCrossOrigin` is `true`), and the credentials'
/// origin rules drop `Authorization` and `Cookie` for it and stop the delegate signing it.
///
/// RecordingAndReplaying.md: "a recording made against a ``LoopbackServer`` answers the next
/// run's, on whatever port it takes", and for redirects "the redirect policy and the
/// credentials' origin rules run on replay too" — here they run on an origin the recording
/// made up. With the policy RedirectPolicy's own doc shows (`redirect.isCrossOrigin ?
/// .doNotFollow : .follow`), the request that recorded a product replays as a 301. Cause, as
/// read: `MatchKey` (RecordedExchange.swift) treats a loopback host's port as no part of the
/// match, but `HTTPArchive.Entry.answer` replays `Location` (and the hop's origin with it)
/// with the recorded port.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingLoopbackRedirectAttackTests {
    func session(baseURL: String, transport: RecordingTransport, crossOrigin: Recorder<Bool>) async -> Result<Product, APIError> {
        let policy = RedirectPolicy { redirect in
            crossOrigin.append(redirect.isCrossOrigin)
            return redirect.isCrossOrigin ? .doNotFollow : .follow
        }
        do {
            let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never, redirectPolicy: policy), transport: transport)
            return .success(try await api.request(route: api.get(endpoint: "/old")).value)
        } catch let error as APIError {
            return .failure(error)
        } catch {
            Issue.record("untyped: \(error)")
            return .failure(.cancelled)
        }
    }

    @Test func aSameOriginRedirectRecordedOnALoopbackPortStaysSameOriginOnAnother() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { request in
            guard request.path == "/new" else {
                return ServerResponse(status: 301, headers: ["Location": "http://\(request.headers["Host"] ?? "")/new"])
            }
            return .json(#"{"name": "moved", "price": 1}"#)
        }
        let recordedCrossOrigin = Recorder<Bool>()
        let recorded = await session(baseURL: server.baseURL, transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()),
                                     crossOrigin: recordedCrossOrigin)
        server.stop()
        #expect(try recorded.get() == Product(name: "moved", price: 1))
        #expect(recordedCrossOrigin.items == [false])

        // The next run: the test's server takes another port (here, one nothing listens on;
        // replay reaches no network).
        let nextRun = try ClosedPort()
        let replayedCrossOrigin = Recorder<Bool>()
        let replayed = await session(baseURL: nextRun.baseURL, transport: try RecordingTransport(file: file, mode: .replay),
                                     crossOrigin: replayedCrossOrigin)
        #expect(replayedCrossOrigin.items == [false], "the recorded same-origin hop replayed as cross-origin")
        switch replayed {
        case .success(let product): #expect(product == Product(name: "moved", price: 1))
        case .failure(let error): Issue.record("recorded a product, replayed \(error)")
        }
    }

    /// The same stale port in a `Link` header: two pages of a listing linked by `Link: <http://
    /// 127.0.0.1:<port>/products?page=2>; rel="next"` (the server writes it from `Host`),
    /// recorded, then replayed in a later run whose server is on another port. Page 1 is
    /// answered; its recorded next link names the last run's port, another origin to the
    /// paginator, which follows no next link to another origin and ends the listing there,
    /// with no error: the replay reads one page where the recording read two (a silently
    /// wrong answer, in `.replay` itself). In `.missing` mode, a page the file lacks would be
    /// sent to the last run's port, not this run's server.
    @Test func aListingRecordedOnALoopbackPortReplaysAllItsPagesOnAnother() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let handler: @Sendable (RecordedRequest) -> ServerResponse = { request in
            let page = Int(request.queryItems.first { $0.name == "page" }?.value ?? "1") ?? 1
            var response = ServerResponse.json(#"[{"name": "p\#(page)", "price": \#(page)}]"#)
            if page < 3 { response.headers["Link"] = "<http://\(request.headers["Host"] ?? "")/products?page=\(page + 1)>; rel=\"next\"" }
            return response
        }
        let first = try LoopbackServer(handler: handler)
        func read(_ baseURL: String, _ transport: RecordingTransport, pages limit: Int) async throws -> [String] {
            let api = try TestAPI(baseURL: baseURL, transport: transport)
            var names: [String] = []
            for try await page in api.pages(APIRequest<[Product]>(.get("/products")), style: .linkHeader) {
                names += page.elements.map(\.name)
                if names.count == limit { break }
            }
            return names
        }
        let recorded = try await read(first.baseURL, RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), pages: 2)
        first.stop()
        #expect(recorded == ["p1", "p2"])

        let nextRun = try ClosedPort()
        let replayed = try await read(nextRun.baseURL, RecordingTransport(file: file, mode: .replay), pages: 2)
        #expect(replayed == ["p1", "p2"], "the listing recorded with two pages replayed \(replayed)")
    }
}
