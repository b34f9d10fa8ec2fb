#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// HTTP/2 over TLS (libcurl only: the API is built on a CurlTransport): a server that
/// interleaves a flood of SETTINGS frames (each asking for an ACK), 4,000 after each 16 KiB
/// DATA frame of a 4 MiB answer, and does not read the ACKs while it sends. Held to "every
/// promise settles exactly once with a typed APIError that says what went wrong" and to the
/// standard CurlFailure.refusedHead sets for nghttp2's refusal of a CONTINUATION flood
/// (ResponsesAndErrors.md: `.transportFailed` with `URLError.badServerResponse`, said by Tern
/// "where libcurl's words would mislead"): the body arrives whole and right, or the request
/// fails as the server's fault. nghttp2 closes the session ("-904: Flooding was detected in
/// this HTTP/2 session"), which Tern reported as `URLError.networkConnectionLost`, read by a
/// caller as the network's fault, not the server's (`CurlFailure.flooded` now says it).
/// (A PING flood of the same size ends instead at the request's timeout, as `.timeout`: the
/// server not reading stalls libcurl's writes before nghttp2 counts the flood; that held.)
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: !isThreadSanitized, "a flood of frames, sanitized on a busy machine, passed the time limit")) struct HTTP2SettingsFloodAttackTests {
    static let size = 4 << 20

    static func body() -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) })
    }

    @Test(arguments: ["settings"]) func aFloodDuringADownloadToMemory(flood: String) async throws {
        let body = Self.body()
        let server = try ScriptedHTTP2Server { request, connection in
            connection.headers(request.stream, endsStream: false, fields: [(31, "application/octet-stream"), (28, String(body.count))])
            var offset = 0
            var sent = 0
            while offset < body.count {
                let end = min(offset + 16_384, body.count)
                connection.send(.data, end == body.count ? 0x1 : 0, request.stream, body[offset..<end])
                offset = end
                for _ in 0..<4_000 {
                    sent += 1
                    if flood == "ping" {
                        connection.send(.ping, 0, 0, Data((0..<8).map { UInt8(truncatingIfNeeded: sent >> ($0 * 8)) }))
                    } else {
                        connection.send(.settings, 0, 0, Data([0x00, 0x03, 0, 0, 0, 100]))
                    }
                }
            }
        }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 40, retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let result = await api.request(route: .get(server.url + "/big")).result as Result<Response, any Error>
        switch result {
        case .success(let response):
            #expect(response.body == body, "a wrong body of \(response.body.count) bytes")
        case .failure(APIError.transportFailed(let failure)):
            let underlying = failure.underlying as? URLError
            #expect(underlying?.code == .badServerResponse, "\(flood): a flood reported as \(failure)")
        case .failure(let error):
            Issue.record("\(flood): \(error)")
        }
    }
}
#endif
