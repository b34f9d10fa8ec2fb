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
/// README: "every promise settles exactly once with a typed APIError". Instead the process dies
/// (SIGILL), on both transports. Nothing checks the length (`BodyStream.init`,
/// `BodyParameters.encode`), and the likeliest traps are the buffers sized by it: over libcurl
/// `BodyPump.nextPiece()` makes `Data(count: Int(min(length - sourceBytes, pieceSize)))`, a
/// negative count; over URLSession `URLSessionTransport` reads a sized stream at or under its
/// in-memory limit into `Data(count: length)`.
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
                let result = await (api.request(route: .post(server.baseURL + "/upload"), parameters: parameters) as Promise<Response>).result
                switch result {
                case .success(let response): print("answered \(response.statusCode)")
                case .failure(let error as APIError): print("failed typed \(error.caseName)")
                case .failure(let error): print("failed untyped \(error)")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.hasPrefix("failed typed"), "the child printed: \(printed)")
    }
}
#endif
