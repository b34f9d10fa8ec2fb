#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// TLS over libcurl against a local HTTPS server (``TLSRelay`` in front of a plain one) with a
/// certificate from a test CA made for the run: trusted when the transport is told the CA,
/// refused otherwise.
///
/// Three minutes: its exit tests wait their turn behind every other exit test of the run (see
/// `ExitTestTurns`), and the wait counts against their limit.
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct CurlTLSTests {
    /// A page over a certificate of a test CA; each connection closed after its answer, so that
    /// every request is a connection of its own.
    final class HTTPSServer: Sendable {
        static let page = "hello over TLS"
        let certificates: TestCertificates
        private let server: LoopbackServer
        private let relay: TLSRelay

        /// - Parameter certificates: The authority and certificate, a new pair if not given.
        init(certificates: TestCertificates? = nil) throws {
            self.certificates = try certificates ?? TestCertificates()
            server = try LoopbackServer { _ in ServerResponse(headers: ["Connection": "close"], body: Data(Self.page.utf8)) }
            relay = try TLSRelay(certificates: self.certificates, to: server.port)
        }

        deinit {
            relay.stop()
            server.stop()
        }

        var url: String { relay.baseURL + "/" }
        var authority: URL { certificates.authority }
    }

    /// The page.
    func get(_ server: HTTPSServer, over transport: CurlTransport) async -> Result<String, any Error> {
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        return await (api.request(route: .get(server.url)) as Promise<String>).result
    }

    @Test(.timeLimit(.minutes(3))) func aPeerSignedByTheTrustedAuthorityIsAccepted() async throws {
        let server = try HTTPSServer()
        let page = try await get(server, over: try CurlTransport(trusting: server.authority)).get()
        #expect(page == HTTPSServer.page)
    }

    @Test(.timeLimit(.minutes(3))) func aPeerTheSystemDoesNotTrustFailsWithATypedError() async throws {
        let server = try HTTPSServer()
        let result = await get(server, over: try CurlTransport())
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .serverCertificateUntrusted)
        #expect("\(failure)".contains("certificate"))
    }

    /// A certificate from the very authority the transport trusts, but for another host, or out
    /// of its dates: refused before a byte of the request is sent, with the error URLSession
    /// gives for each.
    @Test(.timeLimit(.minutes(3)), arguments: [("DNS:example.test", 1, URLError.Code.serverCertificateUntrusted),
                      ("IP:127.0.0.2", 1, .serverCertificateUntrusted),
                      ("DNS:127.0.0.1", 1, .serverCertificateUntrusted),
                      ("IP:127.0.0.1", -1, .serverCertificateHasBadDate)])
    func aPeerOfTheTrustedAuthorityForAnotherHostOrOutOfDateIsRefused(names: String, days: Int, code: URLError.Code) async throws {
        let server = try HTTPSServer(certificates: TestCertificates(names: names, days: days))
        let result = await get(server, over: try CurlTransport(trusting: server.authority))
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == code, "\(failure)")
    }

    #if compiler(>=6.3)
    /// HTTPS is not counted by Tern's own cap (HTTP/2 streams share a connection); libcurl's
    /// total holds it. Each server closes each connection after its answer, so every request is
    /// a connection of its own; without the total, the 8 a host that libcurl opens to 24 hosts
    /// at once ran the child out of descriptors.
    @Test(.exitTest) func requestsToManyHTTPSHostsFitUnderALowDescriptorLimit() async throws {
        let certificates = try TestCertificates()
        let servers = try (0..<24).map { _ in try HTTPSServer(certificates: certificates) }
        for server in servers { _ = try await get(server, over: try CurlTransport(trusting: server.authority)).get() }
        let printed = await CurlTransportTests.requestsUnderALowDescriptorLimit(
            to: servers.map { String($0.url.dropLast()) }, count: 240, answer: HTTPSServer.page, authority: certificates.authority.path)
        // Held to here: an optimized build frees them after their last use, stopping them.
        withExtendedLifetime(servers) {}
        #expect(printed == "all ok\n", "\(printed)")
    }

    /// Uploads from files and streams, many more than the origin's connections: each body is
    /// opened as its request is about to be written. Opened as libcurl took the transfer,
    /// which over HTTPS (connections left to libcurl to count) is before a connection is free,
    /// 72 of these 200 failed for want of a descriptor.
    @Test(.exitTest) func twoHundredUploadsToHTTPSFitUnderALowDescriptorLimit() async throws {
        let certificates = try TestCertificates()
        let server = try LoopbackServer(keepingBodiesUpTo: 0) { request in .text(request.bodyLength == 600_000 ? "ok" : "short") }
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let printed = await CurlTransportTests.requestsUnderALowDescriptorLimit(
            to: [relay.baseURL], count: 200, authority: certificates.authority.path, uploading: 600_000)
        #expect(printed == "all ok\n", "\(printed)")
    }

    /// OpenSSL frees its state in an exit handler, under any thread still in it: a process that
    /// exited with HTTPS requests under way, its loop in a TLS handshake, crashed now and then
    /// (SIGSEGV in `EVP_PKEY_generate`; 8 exits in 400, and 9 in 400 once URLSession had used
    /// OpenSSL first). Tern tells OpenSSL to register no such handler if it comes first, and
    /// otherwise makes exit wait for its loop to leave libcurl. Each child exits a few
    /// milliseconds after sending 64 requests, every one a TLS handshake of its own.
    @Test(.exitTest, arguments: [false, true]) func exitingWithHTTPSRequestsUnderWayDoesNotCrash(urlSessionFirst: Bool) async throws {
        let server = try HTTPSServer()
        let plain = try LoopbackServer { _ in .text("ok") }
        defer { plain.stop() }
        for delay in 0..<12 {
            let printed = await Self.childExiting(afterSending: 64, to: server.url, trusting: server.authority.path, waiting: delay,
                                                  first: urlSessionFirst ? plain.baseURL : nil)
            #expect(printed == "exiting\n", "exit after \(delay) ms: \(printed)")
        }
    }

    /// What a child process printed that sends `count` requests to `url`, after one over
    /// URLSession to `first` if given, and exits `delay` milliseconds later.
    static func childExiting(afterSending count: Int, to url: String, trusting authority: String, waiting delay: Int, first: String?) async -> String {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [count, url, authority, delay, first] in
                CrashBacktrace.printOnCrash()
                if let first { _ = try? await URLSession.shared.data(from: URL(string: first)!) }
                let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                                      transport: try CurlTransport(trusting: URL(fileURLWithPath: authority)), responseQueue: .global())
                let requests = (0..<count).map { _ in api.request(route: .get(url)) as Promise<String> }
                usleep(useconds_t(delay * 1000))
                withExtendedLifetime(requests) { FileHandle.standardOutput.write(Data("exiting\n".utf8)) }
                exit(0)
            }
        }
        return String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
    }
    #endif

    /// Over HTTPS that speaks HTTP/1.1, an answer that says HTTP/2 made libcurl 7.88 take every
    /// connection to the server for a shared one, as over plain HTTP (see `HostileHeadTests`):
    /// it fails, and no connection carries a request while another's answer is on it.
    @Test(.timeLimit(.minutes(3)), arguments: HostileHeadTests.claimsOfHTTP2)
    func anAnswerThatSaysHTTP2OverHTTP1SharesNoConnection(statusLine: String) async throws {
        let certificates = try TestCertificates()
        let (release, halfSent, requests) = (DispatchSemaphore(value: 0), Recorder<Int>(), Recorder<(connection: Int, name: String)>())
        let server = try HostileHeadTests.claimingServer(statusLine: statusLine, release: release, halfSent: halfSent, requests: requests)
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        try await HostileHeadTests().expectClaimRefusedAndNoConnectionShared(at: relay.baseURL, over: api, release: release,
                                                                             halfSent: halfSent, requests: requests)
    }

    @Test(.timeLimit(.minutes(3))) func aStrayResponseOverTLSIsNeverTakenForTheNextAnswer() async throws {
        // The raw server answers each request with its path and sends a whole stray response on
        // the first connection once it is idle; the relay passes it on encrypted as it comes.
        let certificates = try TestCertificates()
        let strayed = Recorder<Int>()
        let server = try ConnectionReuseTests.server(stray: RawServer.Connection.response("stray"), delay: 5, strayed: strayed)
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        let first: String = try await api.request(route: .get(relay.baseURL + "/first")).value
        #expect(first == "first")
        try await ConnectionReuseTests.waitUntilSent(strayed)
        for index in 0..<3 {
            let next: String = try await api.request(route: .get(relay.baseURL + "/next\(index)")).value
            #expect(next == "next\(index)")
        }
    }

    /// An idle TLS connection is checked for stray bytes before it is reused, where TLS 1.3
    /// sends session tickets after the handshake: a well-behaved server's connection must still
    /// carry every request, each after the last has sat idle.
    @Test(.timeLimit(.minutes(3))) func aWellBehavedServerOverTLSKeepsItsConnection() async throws {
        let certificates = try TestCertificates()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                guard connection.send(RawServer.Connection.response(ConnectionReuseTests.name(of: request))) else { return }
            }
        }
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        for index in 0..<5 {
            let next: String = try await api.request(route: .get(relay.baseURL + "/n\(index)")).value
            #expect(next == "n\(index)")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.connections == 1)
    }
}
#endif
