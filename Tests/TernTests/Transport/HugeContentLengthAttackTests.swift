#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// A `Content-Length` a server controls, at the top of what an `Int64` holds.
/// `ResponsesAndErrors.md` promises for the body in memory: "`.responseTooLarge` with the limit
/// and the bytes received (or the `Content-Length` announced); the transfer is stopped at once",
/// and a body cut short settles with a typed `APIError`. A head announcing
/// 9,223,372,036,854,775,807 bytes (`Int64.max`) or 9,223,372,036,854,775,000 (which a `Double`
/// rounds to 2^63) fails typed over libcurl. FoundationNetworking ends the process on both
/// (`Int64(contentLength)` in `_EasyHandle`'s header callback, before any delegate hears of the
/// head): Linux.md says so, and the URLSession run skips the case. Run in a child process so
/// that a crash is a failure, not the end of the test run.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct HugeContentLengthAttackTests {
    @Test(.enabled(if: TestTransport.survivesLengthsPastDoubles, "FoundationNetworking traps on a length a Double rounds to 2^63"),
          arguments: ["9223372036854775807", "9223372036854775000"], [false, true])
    func aHeadAnnouncingNearlyInt64MaxBytesSettlesTyped(length: String, unlimited: Bool) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: \(length)\r\n\r\nhello")
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [url = server.baseURL as String, unlimited] in
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, maximumResponseSize: unlimited ? .unlimited : .megabytes(1),
                                                                      retryPolicy: .never),
                                      transport: TestTransport.make(), responseQueue: .global())
                switch await (api.request(route: .get(url + "/huge")) as Promise<Data>).result {
                case .success(let body): print("success \(body.count)")
                case .failure(let error): print(error is APIError ? "typed" : "untyped \(error)")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed == "typed", "the child printed \(printed.debugDescription)")
    }
}
#endif
