// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A body from `BodyParameters(length:makeStream:)` whose factory hands back a stream that is
/// already closed: the same `InputStream` given again for a 307's second leg (one captured
/// outside the closure, a common slip), or one the app opened and closed itself.
///
/// The README's promise: "every promise settles exactly once with a typed APIError"; the brief
/// on redirects of streamed bodies: "the body must be sent again whole, or the request fail
/// typed". The whole process died (SIGILL) on both transports: reading a closed `InputStream`
/// returns -1 with no error, and asking it for its `streamError` then traps in
/// swift-corelibs-foundation (`InputStream.readFailure` now asks only in the error status). A
/// stream that fails with an error of its own (a directory, a missing file) has one, and fails
/// typed. The child here sends the request; a child killed by a signal fails the test.
@Suite(.onTestThreads, .exitTest) struct ClosedBodyStreamAttackTests {
    @Test(arguments: ["redirected", "closed first"])
    func aBodyStreamThatIsClosedFailsTheRequestTyped(kind: String) async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [kind = kind as String] in
                let server = try RawServer { connection in
                    while let request = connection.readRequest() {
                        if request.hasPrefix("POST /upload") {
                            connection.send("HTTP/1.1 307 Temporary Redirect\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n")
                        } else {
                            connection.send(RawServer.Connection.response("{}"))
                        }
                    }
                }
                defer { server.stop() }
                let stream = InputStream(data: Data("hello".utf8))
                if kind == "closed first" {
                    stream.open()
                    stream.close()
                }
                nonisolated(unsafe) let shared = stream
                let parameters = BodyParameters(length: 5) { shared }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                print(await (api.request(route: .post(server.baseURL + "/upload"), parameters: parameters) as Promise<Response>).outcome)
            }
        }
        // Never answered with a body shorter than the length it states, nor sent empty.
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.hasPrefix("failed typed"), "the child printed: \(printed)")
    }
}
#endif
