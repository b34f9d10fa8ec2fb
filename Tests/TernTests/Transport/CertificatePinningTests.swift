#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Certificate pinning over libcurl against a local HTTPS server with a test CA: the server's
/// own key passes, a wrong key fails before any request byte is sent, a backup key passes, a
/// redirect to a pinned host is checked there, and a connection made without pins is never
/// reused by a request with them.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CertificatePinningTests {
    /// A server behind a ``TLSRelay``, over a certificate of a test CA: it answers each request
    /// with its path, and notes the requests it heard.
    final class RelayingServer: Sendable {
        let certificates: TestCertificates
        let received = Recorder<String>()
        private let server: RawServer
        private let relay: TLSRelay

        init(names: String = "IP:127.0.0.1") throws {
            certificates = try TestCertificates(names: names)
            let received = received
            server = try RawServer { connection in
                while let request = connection.readRequest() {
                    received.append(request)
                    guard connection.send(RawServer.Connection.response(ConnectionReuseTests.name(of: request))) else { return }
                }
            }
            relay = try TLSRelay(certificates: certificates, to: server.port)
        }

        deinit {
            relay.stop()
            server.stop()
        }

        var url: String { relay.baseURL }
        var serverPin: String { get throws { try certificates.pin(ofKey: "server.key") } }
        var authorityPin: String { get throws { try certificates.pin(ofKey: "ca.key") } }
        var requestBytes: Int { received.items.reduce(0) { $0 + $1.utf8.count } }
        var receivedText: String { received.items.joined() }
    }

    /// A pin no key has.
    static let wrongPin = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()

    static func api(_ pins: [String: [String]]?, transport: any Transport,
                    configuration: APIConfiguration = APIConfiguration(retryPolicy: .never)) throws -> AbstractAPI {
        var configuration = configuration
        configuration.certificatePins = try pins.map { try CertificatePins($0) }
        return AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
    }

    /// `path` through `api`.
    static func get(_ path: String, from server: RelayingServer, _ api: AbstractAPI) async throws -> Result<String, any Error> {
        await (api.request(route: .get(server.url + path)) as Promise<String>).result
    }

    @Test func theServersOwnKeyPasses() async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let api = try Self.api(["127.0.0.1": [try server.serverPin]], transport: transport)
        #expect(try await Self.get("/pinned", from: server, api).get() == "pinned")
    }

    @Test func aWrongKeyFailsBeforeAnyByteIsSentAndIsNotRetried() async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let recorder = Recorder<String>()
        let configuration = APIConfiguration(retryPolicy: RetryPolicy(maxRetries: 3, baseDelay: 0.01),
                                             plugins: [WillSendCounter(recorder: recorder)])
        let api = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: transport, configuration: configuration)
        let result = try await Self.get("/secret", from: server, api)
        guard case .failure(APIError.pinningFailed(let failure)) = result else {
            Issue.record("expected pinningFailed, got \(result)")
            return
        }
        #expect(failure.reason == .keyMismatch)
        #expect(failure.host == "127.0.0.1")
        #expect(failure.pins == [Self.wrongPin])
        #expect("\(failure)".contains(Self.wrongPin))
        // It says which key the server showed, the pin that would have let it through.
        #expect(failure.presentedKey == (try server.serverPin))
        #expect("\(failure)".hasSuffix("; it holds \(try server.serverPin)."), "\(failure)")
        // Sent to the transport once: no retry.
        #expect(recorder.items.filter { $0 == "/secret" }.count == 1)
        let attempts = recorder.items.count
        let again = await (api.request(route: .get(server.url + "/secret")) as Promise<String>).result
        guard case .failure(APIError.pinningFailed) = again else { Issue.record("expected pinningFailed, got \(again)"); return }
        #expect(recorder.items.count == attempts + 1)
        // The server heard nothing; the right pin on the same server is heard.
        #expect(server.requestBytes == 0)
        let right = try Self.api(["127.0.0.1": [try server.serverPin]], transport: transport)
        #expect(try await Self.get("/heard", from: server, right).get() == "heard")
        #expect(server.requestBytes > 0)
    }

    /// libcurl reads `127.1`, `0x7f.0.0.1` and `2130706433` as `127.0.0.1` and connects there:
    /// the pin for `127.0.0.1` holds for each. (It did not: each reached the server unchecked.)
    @Test(arguments: ["127.1", "0x7f.0.0.1", "2130706433"])
    func aPinForAnAddressHoldsHoweverTheURLSpellsIt(spelling: String) async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let api = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: transport)
        let url = server.url.replacingOccurrences(of: "127.0.0.1", with: spelling) + "/secret"
        let result = await (api.request(route: .get(url)) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let failure)) = result else {
            Issue.record("expected pinningFailed, got \(result)")
            return
        }
        #expect(failure.reason == .keyMismatch)
        #expect(server.requestBytes == 0)
        // The same spelling with the right pin reaches the server: the address is the same.
        let right = try Self.api(["127.0.0.1": [try server.serverPin]], transport: transport)
        #expect(try await (right.request(route: .get(url)) as Promise<String>).value == "secret")
    }

    /// `[::ffff:127.0.0.1]` is 127.0.0.1 over IPv4: libcurl connects through it to the relay,
    /// bound to 127.0.0.1 alone. With a certificate naming that spelling too (a server's own
    /// could), each reached the server unchecked by the pin for `127.0.0.1`.
    @Test(arguments: ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"])
    func aPinForAnAddressHoldsForItsIPv4MappedSpelling(spelling: String) async throws {
        let server = try RelayingServer(names: "IP:127.0.0.1,IP:::ffff:127.0.0.1")
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let url = server.url.replacingOccurrences(of: "127.0.0.1", with: spelling) + "/secret"
        let api = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: transport)
        let result = await (api.request(route: .get(url)) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let failure)) = result else {
            Issue.record("expected pinningFailed, got \(result)")
            return
        }
        #expect(failure.reason == .keyMismatch)
        #expect(server.requestBytes == 0)
        // The server is reached through that spelling: with its key pinned, it answers.
        let right = try Self.api(["127.0.0.1": [try server.serverPin]], transport: transport)
        #expect(try await (right.request(route: .get(url)) as Promise<String>).value == "secret")
        // URLSession on Linux cannot check pins: the mapped spelling is still a pinned host,
        // refused before anything is sent rather than sent unchecked.
        let heard = server.received.items.count
        let unchecked = AbstractAPI(configuration: api.configuration, transport: URLSessionTransport(), responseQueue: .global())
        let refused = await (unchecked.request(route: .get(url)) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let cannot)) = refused else {
            Issue.record("expected pinningFailed over URLSession, got \(refused)")
            return
        }
        #expect(cannot.reason == .transportCannotPin)
        #expect(server.received.items.count == heard)
    }

    @Test func aBackupKeyBesideAWrongOnePasses() async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let api = try Self.api(["127.0.0.1": [Self.wrongPin, try server.serverPin]], transport: transport)
        #expect(try await Self.get("/backup", from: server, api).get() == "backup")
    }

    /// libcurl checks the server's own certificate: the authority's key above it does not pass.
    @Test func theAuthoritysKeyIsNotTheServers() async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let api = try Self.api(["127.0.0.1": [try server.authorityPin]], transport: transport)
        let result = try await Self.get("/above", from: server, api)
        guard case .failure(APIError.pinningFailed(let failure)) = result else { Issue.record("expected pinningFailed, got \(result)"); return }
        #expect(failure.reason == .keyMismatch)
    }

    /// A connection opened without pins (another API on the same transport) is not taken by a
    /// request with a wrong pin, which would then skip the check: on the open connection the
    /// request would be answered, on a new one it fails its check unsent.
    @Test func aConnectionMadeWithoutPinsIsNotReusedByAPinnedRequest() async throws {
        let server = try RelayingServer()
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let unpinned = try Self.api(nil, transport: transport)
        #expect(try await Self.get("/open", from: server, unpinned).get() == "open")
        #expect(try await (unpinned.request(route: .get(server.url + "/again")) as Promise<String>).value == "again")
        let pinned = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: transport,
                                  configuration: APIConfiguration(timeout: 2, retryPolicy: .never))
        let result = await (pinned.request(route: .get(server.url + "/reuse")) as Promise<String>).result
        if case .success = result { Issue.record("the pinned request went out on the unpinned connection") }
        #expect(!server.receivedText.contains("/reuse"))
    }

    /// Each stop of a redirect chain is checked for its own host: a plain-HTTP server (not
    /// pinned) sends the request on to the pinned one.
    @Test func aRedirectToAPinnedHostIsCheckedThere() async throws {
        let server = try RelayingServer()
        let target = server.url
        let redirecting = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("", status: "302 Found", headers: "Location: \(target)/landed\r\n")) else { return }
            }
        }
        defer { redirecting.stop() }
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let start = redirecting.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/start"
        _ = try await Self.get("/warm", from: server, try Self.api(nil, transport: try CurlTransport(trusting: server.certificates.authority)))
        let wrong = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: transport)
        let refused = await (wrong.request(route: .get(start)) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let failure)) = refused else { Issue.record("expected pinningFailed, got \(refused)"); return }
        #expect(failure.url?.path == "/landed")
        let right = try Self.api(["127.0.0.1": [try server.serverPin]], transport: transport)
        #expect(try await (right.request(route: .get(start)) as Promise<String>).value == "landed")
    }

    @Test func plainHTTPToAPinnedHostIsNeverSent() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { _ = connection.send(RawServer.Connection.response("plain")) }
        }
        defer { server.stop() }
        let api = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: try CurlTransport())
        let result = await (api.request(route: .get(server.baseURL + "/plain")) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let failure)) = result else { Issue.record("expected pinningFailed, got \(result)"); return }
        #expect(failure.reason == .notEncrypted)
        #expect(server.connections == 0)
    }

    /// Pins in a configuration (given, or a pinned API's handed to another) over a transport that
    /// cannot check them: its requests fail before anything is sent; sample data sends nothing.
    @Test func aPinnedConfigurationOverATransportThatCannotPinFailsTheRequestBeforeSendingIt() async throws {
        let pinned = try Self.api(["127.0.0.1": [Self.wrongPin]], transport: try CurlTransport())
        let api = AbstractAPI(configuration: pinned.configuration, transport: URLSessionTransport(), responseQueue: .global())
        let closed = try ClosedPort()
        let result = await (api.request(route: .get("https://127.0.0.1:\(closed.port)/")) as Promise<String>).result
        guard case .failure(APIError.pinningFailed(let failure)) = result else { Issue.record("expected pinningFailed, got \(result)"); return }
        #expect(failure.reason == .transportCannotPin)
        #expect("\(failure)".contains("CurlTransport"))
        var samples = pinned.configuration
        samples.usesSampleData = true
        let sampled = AbstractAPI(configuration: samples, transport: URLSessionTransport(), responseQueue: .global())
        let sample: String = try await sampled.request(route: .get("https://127.0.0.1:\(closed.port)/"),
                                                       options: RequestOptions(sampleData: .json(#""sample""#))).value
        #expect(sample == #""sample""#)
    }
}

/// Notes the path of each request handed to the transport.
private struct WillSendCounter: Plugin {
    let recorder: Recorder<String>
    func observe(_ event: PluginEvent, api: APIContext) {
        if case .willSend(let request) = event { recorder.append(request.url?.path ?? "") }
    }
}
#endif
