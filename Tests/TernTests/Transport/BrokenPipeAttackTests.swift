// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
import Tern
import TernTesting

/// A server that reads the start of a large upload, then resets the connection, while the
/// client still writes: in a process that keeps SIGPIPE's default, which ends a process that
/// writes to a closed socket without asking not to be told. Set in a child process (an exit
/// test), over plain HTTP on the run's transport and over TLS with libcurl. "Every promise
/// settles exactly once, with a typed APIError": never a process killed by a signal.
@Suite(.onTestThreads, .exitTest) struct BrokenPipeAttackTests {
    /// Reads `64 KiB` of each connection, then closes it with a reset.
    static func server() throws -> RawServer {
        try RawServer { connection in
            _ = connection.readAvailable(for: 2, limit: 65_536)
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection.socket, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
        }
    }

    /// "typed" for an `APIError` other than a timeout, else what it was.
    static func outcome(of error: any Error) -> String {
        switch error as? APIError {
        case .timeout?: "timeout"
        case .some: "typed"
        case nil: "untyped \(error)"
        }
    }

    /// In the child: SIGPIPE as a process starts with it; a POST and a PUT of 8 MiB, each
    /// cut by the server; prints how each ended.
    static func uploadTwice(to url: String, trusting authority: String) async throws {
        signal(SIGPIPE, SIG_DFL)
        let transport: (any Transport)?
        if authority.isEmpty {
            transport = TestTransport.make()
        } else {
            transport = try CurlTransport(trusting: URL(fileURLWithPath: authority))
        }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: transport, responseQueue: .global())
        var outcomes: [String] = []
        for method in ["POST", "PUT"] {
            let route = Route(method: HTTPMethod(rawValue: method), url: url + "/upload")
            let result = await (api.request(route: route, parameters: BodyParameters(Data(count: 8 << 20))) as Promise<Data>).result
            switch result {
            case .success: outcomes.append("answered")
            case .failure(let error): outcomes.append(outcome(of: error))
            }
        }
        print(outcomes.joined(separator: "|"))
    }

    @Test(arguments: [false, true]) func anUploadCutByTheServerEndsTyped(tls: Bool) async throws {
        guard !tls || TestTransport.isCurl else { return }
        let server = try Self.server()
        defer { server.stop() }
        let certificates = tls ? try TestCertificates() : nil
        let relay = try certificates.map { try TLSRelay(certificates: $0, to: server.port) }
        defer { relay?.stop() }
        let authority = certificates?.authority.path ?? ""
        let url = relay?.baseURL ?? "http://127.0.0.1:\(server.port)"
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [url = url as String, authority = authority as String] in
                try await Self.uploadTwice(to: url, trusting: authority)
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed == "typed|typed", "TLS \(tls): \(printed)")
    }
}

#endif
