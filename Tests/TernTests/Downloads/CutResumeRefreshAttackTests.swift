import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
import TernTesting

/// A download cut off midway whose retry (the resume of its own bytes, `Range: bytes=<n>-`) is
/// refused with a 401 because the token expired meanwhile: the delegate refreshes once, and
/// the request goes again. UploadsAndDownloads.md: "A retry after a lost connection goes on
/// from what it has"; Authentication.md: a refused request is refreshed and "sent again".
/// Never a silently wrong answer: the file delivered is the file's bytes, whole, once.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CutResumeRefreshAttackTests {
    typealias Lie = ResumeLie
    typealias Tokens = EventSourceTests.CountingTokens

    @Test func aCutDownloadWhoseResumeIsRefusedUntilRefreshedGoesOnFromItsBytes() async throws {
        let directory = try Lie.Directory()
        let body = Lie.body(1, bytes: 3000)
        // 1: the whole file's head, 2,000 of its 3,000 bytes, then the connection closes.
        // Then every request with the old token gets a 401 (with a body of its own); with the
        // new one, the range asked for.
        let server = try Lie.Server(closesAfter: { $0 == 1 }) { request, index in
            if index == 1 {
                return Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: 3000\r\n\r\n".utf8) + [UInt8](body.prefix(2000))
            }
            if Lie.header("Authorization", in: request) == "Bearer t1" {
                return Lie.answer("401 Unauthorized", "Content-Type: text/plain\r\n", body: Data("token expired, sign in again".utf8))
            }
            let (head, rest) = Lie.ranged(request, of: body)
            return head + rest
        }
        defer { server.stop() }
        let tokens = Tokens()
        let api = try Lie.api(retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        api.delegate = tokens
        let outcome = await api.download(route: .get(server.url + "/file"), to: directory.destination).result
        withExtendedLifetime(tokens) {}
        let ranges = server.header("Range"), tokensSent = server.header("Authorization")
        switch outcome {
        case .success(let file):
            let delivered = try Data(contentsOf: file.fileURL)
            #expect(delivered == body, "delivered \(delivered.count) bytes, not the file's 3000; ranges asked \(ranges), tokens \(tokensSent)")
        case .failure(let error):
            Issue.record("the download failed: \(error); ranges asked \(ranges), tokens \(tokensSent)")
        }
        #expect(directory.files == ["file.bin"])
    }

    /// A delegate whose refresh never settles: the requests it holds wait for the API's timeout.
    final class Stuck: APIDelegate {
        let held = Recorder<Promise<Void>.Resolver>()
        let asked = Locked(0)
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer t1", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            asked.withLock { $0 += 1 }
            let (promise, resolver) = Promise<Void>.pending(in: .global())
            held.append(resolver)   // kept, never settled
            return promise
        }
    }

    /// The server of the attacks below: the file's head and its first 2,000 bytes of 3,000 on
    /// the first connection, cut; every later request refused with a 401.
    static func cutThenRefused(_ body: Data) throws -> Lie.Server {
        try Lie.Server(closesAfter: { $0 == 1 }) { request, index in
            if index == 1 {
                return Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: 3000\r\n\r\n".utf8) + [UInt8](body.prefix(2000))
            }
            return Lie.answer("401 Unauthorized", "Content-Type: text/plain\r\n", body: Data("token expired".utf8))
        }
    }

    /// UploadsAndDownloads.md: "A download runs against its request's timeout as any request
    /// does [...] Its bytes are kept for a resume when the time runs out", and "Cut off,
    /// cancelled or timed out: the bytes that arrived are kept when they can be resumed". The
    /// download is cut after 2,000 bytes (with a strong ETag), its resume refused with a 401, and
    /// the refresh never ends: the request times out, or is cancelled while it waits, and its
    /// 2,000 bytes must be pending.
    @Test(arguments: ["timed out", "cancelled"])
    func aCutDownloadWhoseRefreshHangsKeepsItsBytes(ending: String) async throws {
        let directory = try Lie.Directory()
        let body = Lie.body(1, bytes: 3000)
        let server = try Self.cutThenRefused(body)
        defer { server.stop() }
        let stuck = Stuck()
        let api = try TestAPI(baseURL: "http://127.0.0.1:1", configuration: APIConfiguration(
            timeout: ending == "timed out" ? 4 : 30, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false)))
        api.delegate = stuck
        let promise = api.download(route: .get(server.url + "/file"), to: directory.destination)
        if ending == "cancelled" {
            // Waits until the refresh runs (the resume was refused), bounded.
            for _ in 0..<200 where stuck.asked.withLock({ $0 }) == 0 { try await Task.sleep(nanoseconds: 50_000_000) }
            promise.cancel()
        }
        let outcome = await promise.result
        withExtendedLifetime(stuck) {}
        guard case .failure(let error) = outcome, ending == "timed out" || (error as? APIError)?.isCancellation == true else {
            Issue.record("expected to have \(ending), got \(outcome)")
            return
        }
        #expect(stuck.asked.withLock { $0 } == 1, "the refresh was asked \(stuck.asked.withLock { $0 }) times; \(server.header("Range"))")
        let pending = ResumableDownload.pending(for: directory.destination)
        #expect(pending?.offset == 2000,
                "\(ending) (\(error)) with \(pending.map { "\($0.offset) bytes pending" } ?? "nothing pending"); ranges asked \(server.header("Range")), files \(directory.files)")
    }
}
