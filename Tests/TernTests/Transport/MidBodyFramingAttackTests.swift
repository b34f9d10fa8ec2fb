import Foundation
import Testing
import Tern
import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A chunked HTTP/1.1 body whose framing breaks after 240,000 good bytes: a chunk size that is
/// no hex number (`zz`, `-5`, `0x5`), or a chunk longer than its size said. The words are
/// libcurl's and say it ("Illegal or missing hexadecimal sequence in chunked-encoding"), but
/// the `URLError` a caller branches on does not: over libcurl it is `networkConnectionLost`
/// (CURLE_RECV_ERROR, mapped by `CurlCode.urlError`), the network's fault, and `unknown` for
/// `0x5` ("Failed reading the chunked-encoded stream"); over URLSession `unknown` for all.
/// FramingLieAttackTests takes any `URLError` for such frames; this holds them to
/// ResponsesAndErrors.md ("whatever … a hostile server does, a request ends in one `APIError`
/// that names the problem") as Tern already does for a head it refuses and for an HTTP/2
/// flood: `.transportFailed` with `URLError.badServerResponse`, the server's fault. It holds
/// now: libcurl's words for a broken chunk framing code the error, over both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MidBodyFramingAttackTests {
    static let breaches: [String] = ["zz\r\nhello\r\n0\r\n\r\n", "-5\r\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "0x5\r\nhello\r\n0\r\n\r\n"]

    @Test(arguments: breaches.indices) func aChunkFramingBrokenMidBodyIsTheServersFault(index: Int) async throws {
        let piece = String(repeating: "a", count: 60_000)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<4 { _ = connection.send(String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n") }
            _ = connection.send(Self.breaches[index])
            connection.pause(200)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let result = await (api.request(route: .get(server.baseURL + "/x")) as Promise<Response>).result
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("\(Self.breaches[index].debugDescription): \(result)")
            return
        }
        #expect((failure.underlying as? URLError)?.code == .badServerResponse, "\(Self.breaches[index].debugDescription): \(failure)")
    }
}
