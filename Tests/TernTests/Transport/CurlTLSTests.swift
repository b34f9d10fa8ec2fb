#if os(Linux)
import Foundation
import Testing
import Tern

/// TLS over libcurl against a local HTTPS server (`openssl s_server`) with a certificate from a
/// test CA made for the run: trusted when the transport is told the CA, refused otherwise.
@Suite(.timeLimit(.minutes(1))) struct CurlTLSTests {
    /// `openssl s_server` answering with its status page, over a certificate of a test CA.
    final class HTTPSServer: Sendable {
        let certificates: TestCertificates
        let port: Int
        let process: Process

        /// - Parameter certificates: The authority and certificate, a new pair if not given.
        init(certificates: TestCertificates? = nil) throws {
            self.certificates = try certificates ?? TestCertificates()
            // A port free when asked may be another test's by the time s_server binds it; then
            // s_server exits at once (within a few milliseconds, seen), and starts again on
            // another. Listening and still running a moment later, it is this one's.
            var port = try TestCertificates.freePort()
            var process = try self.certificates.server(on: port, ["-www"])
            for _ in 0..<4 {
                let deadline = Date().addingTimeInterval(5)
                while process.isRunning, !TestCertificates.accepts(port), Date() < deadline { usleep(5_000) }
                usleep(50_000)
                guard !process.isRunning else { break }
                port = try TestCertificates.freePort()
                process = try self.certificates.server(on: port, ["-www"])
            }
            self.port = port
            self.process = process
        }

        deinit {
            stopServer(process)
        }

        var url: String { "https://127.0.0.1:\(port)/" }
        var authority: URL { certificates.authority }
    }

    /// The status page, once the server listens.
    func get(_ server: HTTPSServer, over transport: CurlTransport) async -> Result<String, any Error> {
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        for _ in 0..<200 {
            let result = await (api.request(route: .get(server.url)) as Promise<String>).result
            // Not listening yet: the key pair and s_server take a moment.
            if case .failure(APIError.transportFailed(let failure)) = result, failure.urlError?.code == .cannotConnectToHost {
                try? await Task.sleep(nanoseconds: 50_000_000)
                continue
            }
            return result
        }
        return .failure(TestError())
    }

    @Test func aPeerSignedByTheTrustedAuthorityIsAccepted() async throws {
        let server = try HTTPSServer()
        let page = try await get(server, over: try CurlTransport(trusting: server.authority)).get()
        #expect(page.contains("s_server"))
    }

    @Test func aPeerTheSystemDoesNotTrustFailsWithATypedError() async throws {
        let server = try HTTPSServer()
        let result = await get(server, over: try CurlTransport())
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .serverCertificateUntrusted)
        #expect("\(failure)".contains("certificate"))
    }

    #if compiler(>=6.3)
    /// HTTPS is not counted by Tern's own cap (HTTP/2 streams share a connection); libcurl's
    /// total holds it. Each s_server answers one connection at a time and closes it, so every
    /// request is a connection of its own; without the total, the 8 a host that libcurl opens
    /// to 24 hosts at once ran the child out of descriptors.
    @Test func requestsToManyHTTPSHostsFitUnderALowDescriptorLimit() async throws {
        let certificates = try TestCertificates()
        let servers = try (0..<24).map { _ in try HTTPSServer(certificates: certificates) }
        for server in servers { _ = try await get(server, over: try CurlTransport(trusting: server.authority)).get() }
        let printed = await CurlTransportTests.requestsUnderALowDescriptorLimit(
            to: servers.map { String($0.url.dropLast()) }, count: 480, answer: "s_server", authority: certificates.authority.path)
        // Held to here: an optimized build frees them after their last use, stopping s_server.
        withExtendedLifetime(servers) {}
        #expect(printed.contains("all ok"), "\(printed)")
    }
    #endif

    @Test func aStrayResponseOverTLSIsNeverTakenForTheNextAnswer() async throws {
        // s_server relays one connection at a time between its standard streams and the client:
        // a thread answers each request with its path, and the test sends a whole stray response
        // on the idle connection.
        let certificates = try TestCertificates()
        let port = try TestCertificates.freePort()
        let (input, output) = (Pipe(), Pipe())
        let process = try certificates.server(on: port, [], input: input, output: output)
        defer { stopServer(process) }
        let answer = { @Sendable (body: String) in input.fileHandleForWriting.write(Data(RawServer.Connection.response(body).utf8)) }
        Thread {
            var buffer = Data()
            while case let chunk = output.fileHandleForReading.availableData, !chunk.isEmpty {
                buffer.append(chunk)
                while let end = buffer.range(of: Data("\r\n\r\n".utf8)) {
                    let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                    buffer.removeSubrange(..<end.upperBound)
                    answer(ConnectionReuseTests.name(of: head))
                }
            }
        }.start()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        let base = "https://127.0.0.1:\(port)"
        var first = await (api.request(route: .get(base + "/first")) as Promise<String>).result
        for _ in 0..<200 {
            // Until s_server listens.
            guard case .failure(APIError.transportFailed(let failure)) = first, failure.urlError?.code == .cannotConnectToHost else { break }
            try await Task.sleep(for: .milliseconds(50))
            first = await (api.request(route: .get(base + "/first")) as Promise<String>).result
        }
        #expect(try first.get() == "first")
        try await Task.sleep(for: .milliseconds(100))
        answer("stray")
        // s_server relays it when it reads it: no signal says when, so a generous wait.
        try await Task.sleep(for: .milliseconds(500))
        for index in 0..<3 {
            let next: String = try await api.request(route: .get(base + "/next\(index)")).value
            #expect(next == "next\(index)")
        }
    }
}
#endif
