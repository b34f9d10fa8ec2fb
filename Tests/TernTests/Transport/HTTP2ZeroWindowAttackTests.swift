#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// An HTTP/2 server that never gives an upload any flow-control credit past the first 64 KiB:
/// the request must settle at its timeout, typed.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2ZeroWindowAttackTests {
    final class Server: @unchecked Sendable {
        let certificates: TestCertificates
        private var tls: RelayedRawServer?
        private let lock = NSLock()
        private var count = 0
        var received: Int { lock.withLock { count } }

        init() throws {
            certificates = try TestCertificates()
            tls = try RelayedRawServer(certificates: certificates) { [weak self] connection in
                let socket = connection.socket
                var chunk = [UInt8](repeating: 0, count: 65_536)
                var sentSettings = false
                while case let count = recv(socket, &chunk, chunk.count, 0), count > 0 {
                    self?.lock.withLock { self?.count += count }
                    if !sentSettings {
                        sentSettings = true
                        // SETTINGS (empty), then an ACK of the client's.
                        let frames: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0]
                        _ = frames.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                }
            }
        }

        var url: String { tls?.url ?? "" }
    }

    @Test(arguments: [false, true])
    func anUploadWithNoWindowSettlesAtItsTimeout(idle: Bool) async throws {
        let server = try Server()
        let configuration = idle ? APIConfiguration(timeout: 30, idleTimeout: 2, retryPolicy: .never) : APIConfiguration(timeout: 3, retryPolicy: .never)
        let api = AbstractAPI(configuration: configuration, transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let started = Date()
        let result = await (api.request(route: .put(server.url + "/upload"), parameters: BodyParameters(Data(count: 300_000), contentType: "application/octet-stream")) as Promise<Data>).result
        let took = Date().timeIntervalSince(started)
        switch result {
        case .failure(APIError.timeout) where !idle:
            break
        case .failure(APIError.transportFailed(let failure)) where idle:
            // An idle timeout is the transport's (ResponsesAndErrors: `URLError.timedOut`).
            #expect(failure.urlError?.code == .timedOut, "\(failure)")
        default:
            Issue.record("expected a timeout, got \(result) after \(took) s")
            return
        }
        #expect(took < 15, "took \(took) s")
        #expect(server.received < 200_000)
    }
}
#endif
