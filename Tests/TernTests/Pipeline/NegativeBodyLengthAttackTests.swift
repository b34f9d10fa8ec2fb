// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A streamed body whose stated length is negative (`BodyParameters(length: size - sent)` where
/// the app's arithmetic went under zero): an argument Tern can refuse, as it refuses a timeout
/// that is not positive (`invalidRequest(.invalidTimeout)`) or a file that is not a regular
/// file, before anything is sent.
///
/// README: "every promise settles exactly once with a typed APIError". The process died (SIGILL)
/// on both transports, in buffers sized by the length; it now fails with `encodingFailed`.
@Suite(.onTestThreads, .exitTest) struct NegativeBodyLengthAttackTests {
    @Test func aNegativeStatedLengthFailsTheRequestTyped() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let server = try RawServer { connection in
                    while connection.readRequest() != nil { connection.send(RawServer.Connection.response("{}")) }
                }
                defer { server.stop() }
                let parameters = BodyParameters(length: -1) { InputStream(data: Data("hello".utf8)) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                print(await (api.request(route: .post(server.baseURL + "/upload"), parameters: parameters) as Promise<Response>).outcome)
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.hasPrefix("failed typed"), "the child printed: \(printed)")
    }
}
#endif
