import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `Transfer-Encoding` whose value comes on an obsolete folded line (RFC 9112 §5.2), from a
/// raw socket.
///
/// Promised (`ResponseHeadCheck`): a head that frames its body two ways is refused, typed,
/// so that no body is read at a length or in a framing the head does not say. Tern's head
/// reader joins a folded line to the field before it (as RFC 9112 §5.2 asks a user agent), so
/// the answer it hands over says `Transfer-Encoding: chunked`; libcurl 7.88 does not unfold:
/// it sees an empty `Transfer-Encoding`, no length, and reads the body to the connection's
/// close, raw. The request succeeded with the chunks' framing taken for the body,
/// `"5\r\nhello\r\n0\r\n\r\n"` under a head that says it was chunked: silently wrong.
/// `CurlTransport` refuses such a head. FoundationNetworking unfolds it before Tern sees it,
/// and reads the body as its libcurl does: the Linux article says so, among what remains
/// FoundationNetworking's.
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: TestTransport.isCurl)) struct FoldedFramingAttackTests {
    @Test func aFoldedTransferEncodingIsReadAsItSaysOrRefused() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            // The connection closes as the script returns: the body's end, for a reader that
            // reads to it.
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let result = await (api.request(route: .get(server.baseURL + "/folded")) as Promise<Response>).result
        switch result {
        case .success(let response):
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body == "hello", "the head says \(response.headers["Transfer-Encoding"] ?? "nothing"), the body came as \(body.debugDescription)")
        case .failure(APIError.transportFailed(let failure)):
            #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
        case .failure(let error):
            Issue.record("expected the body or a refusal, got \(error)")
        }
    }
}
