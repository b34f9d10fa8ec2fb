#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Certificate pins meeting what outlives one connection: a cached answer revalidated, an
/// event source reconnecting, a download resumed with `Range`, a redirect, each after the
/// server behind the same host and port changed its key to one the pins do not name. One
/// address (a TCP front on a fixed port) is switched between two TLS relays with different
/// keys, both signed by authorities the transport trusts, to one plain backend.
///
/// Over libcurl whatever `TERN_TEST_TRANSPORT` says: URLSession on Linux cannot check pins, and
/// a request to a pinned host fails before it is sent (`CertificatePinningTests` shows it).
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(2))) struct PinnedKeyChangeAttackTests {
    /// Two keys at one address, to `backend`.
    final class SwitchingOrigin: Sendable {
        let first: TestCertificates
        let second: TestCertificates
        let firstRelay: TLSRelay
        let secondRelay: TLSRelay
        let front: RawServer
        let target = Recorder<Int>()
        let trusted: URL

        init(backendPort: Int) throws {
            first = try TestCertificates()
            second = try TestCertificates()
            firstRelay = try TLSRelay(certificates: first, to: backendPort)
            secondRelay = try TLSRelay(certificates: second, to: backendPort)
            let target = target
            target.append(firstRelay.port)
            front = try RawServer { connection in
                guard let port = target.items.last,
                      let backend = try? CurlConnectionsTests.socket(boundTo: 0) else { return }
                defer { close(backend) }
                guard (try? CurlConnectionsTests.connect(backend, to: Int32(port))) != nil else { return }
                RawServer.relay(connection.socket, backend)
            }
            // Both authorities, one file.
            trusted = first.directory.appendingPathComponent("both.pem")
            try (try Data(contentsOf: first.authority) + Data(contentsOf: second.authority)).write(to: trusted)
        }

        deinit {
            front.stop()
            firstRelay.stop()
            secondRelay.stop()
        }

        /// Sends later connections to the relay with the second key (or back to the first).
        func switchKey(toSecond: Bool) { target.append(toSecond ? secondRelay.port : firstRelay.port) }

        var baseURL: String { "https://127.0.0.1:\(front.port)" }
        var firstPin: String { get throws { try first.pin(ofKey: "server.key") } }
        var secondPin: String { get throws { try second.pin(ofKey: "server.key") } }

        func api(pins: [String]?, cache: HTTPCache? = nil, retryPolicy: RetryPolicy = .never, timeout: TimeInterval = 20) throws -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: timeout, retryPolicy: retryPolicy,
                                                        certificatePins: try pins.map { try CertificatePins(["127.0.0.1": $0]) }, cache: cache),
                        transport: try CurlTransport(trusting: trusted), responseQueue: .global())
        }
    }

    /// A backend that reads one request a connection and answers it with `answer`, closing.
    static func backend(_ answer: @escaping @Sendable (_ request: String, _ number: Int) -> String) throws -> (RawServer, Recorder<String>) {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            requests.append(request)
            connection.send(answer(request, requests.items.count))
        }
        return (server, requests)
    }

    static func field(_ name: String, in request: String) -> String? {
        let line = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
        return line.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    static func isPinningFailure<T>(_ result: Result<T, any Error>) -> Bool {
        if case .failure(APIError.pinningFailed) = result { true } else { false }
    }

    // MARK: The cache

    /// An answer kept with `no-cache` (every use revalidated), then the key changes: the
    /// revalidation fails pinned, and the kept answer is not served in its place; memory and
    /// disk caches alike. Back on the pinned key, the revalidation's 304 serves it again.
    @Test(arguments: [false, true])
    func aRevalidationToAnotherKeyFailsPinnedAndServesNothingKept(onDisk: Bool) async throws {
        let (server, requests) = try Self.backend { request, _ in
            if Self.field("If-None-Match", in: request) == "\"v1\"" {
                return "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
            }
            return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\nkept"
        }
        defer { server.stop() }
        let origin = try SwitchingOrigin(backendPort: server.port)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pinned-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try onDisk ? HTTPCache(directory: directory) : HTTPCache()
        let api = try origin.api(pins: [try origin.firstPin], cache: cache)
        let url = origin.baseURL + "/item"
        #expect(try await (api.request(route: .get(url)) as Promise<String>).value == "kept")
        origin.switchKey(toSecond: true)
        let refused = await (api.request(route: .get(url)) as Promise<String>).result
        #expect(Self.isPinningFailure(refused), "\(refused)")
        // Even a request that would take a stale answer gets nothing kept.
        let stale = await (api.request(route: .get(url), options: RequestOptions(cachePolicy: .returnCacheDataElseLoad)) as Promise<String>).result
        #expect(Self.isPinningFailure(stale), "\(stale)")
        #expect(requests.items.count == 1, "\(requests.items)")
        origin.switchKey(toSecond: false)
        #expect(try await (api.request(route: .get(url)) as Promise<String>).value == "kept")
        #expect(requests.items.count == 2)
        #expect(requests.items.last.flatMap { Self.field("If-None-Match", in: $0) } == "\"v1\"")
    }

    // MARK: An event source

    /// A pinned event source whose reconnection meets the other key: it ends with
    /// `pinningFailed` at once, its request never sent, and does not come back.
    @Test func anEventSourceReconnectingToAnotherKeyEndsPinned() async throws {
        let switched = Recorder<Bool>()
        let originBox = Recorder<SwitchingOrigin>()
        let (server, requests) = try Self.backend { _, _ in
            // The next connection meets the other key.
            originBox.items.first?.switchKey(toSecond: true)
            switched.append(true)
            let body = "retry: 10\nid: 1\ndata: a\n\n"
            return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        }
        defer { server.stop() }
        let origin = try SwitchingOrigin(backendPort: server.port)
        originBox.append(origin)
        let api = try origin.api(pins: [try origin.firstPin])
        var events: [ServerSentEvent] = []
        do {
            for try await event in api.events(route: .get(origin.baseURL + "/changes"), reconnection: EventReconnection(delay: 0.5)) {
                events.append(event)
            }
            Issue.record("the source ended without an error")
        } catch APIError.pinningFailed {
        } catch {
            Issue.record("expected pinningFailed, got \(error)")
        }
        #expect(events == [ServerSentEvent(data: "a", lastEventID: "1")])
        try await Task.sleep(for: .milliseconds(1200))
        #expect(requests.items.count == 1)
    }

    // MARK: A download resumed

    /// A pinned download cut short, then resumed with `Range` once the key changed: the resume
    /// fails pinned, sends nothing, and keeps the bytes; resumed on the pinned key, it goes on
    /// from them and the file is whole.
    @Test func aResumeToAnotherKeyFailsPinnedAndKeepsTheBytes() async throws {
        let whole = Data((0..<20_000).map { UInt8(65 + $0 % 26) })
        let (server, requests) = try Self.backend { request, number in
            if let range = Self.field("Range", in: request), range.hasPrefix("bytes="),
               let start = Int(range.dropFirst(6).split(separator: "-").first ?? "") {
                let rest = whole[start...]
                return "HTTP/1.1 206 Partial Content\r\nContent-Length: \(rest.count)\r\nContent-Range: bytes \(start)-\(whole.count - 1)/\(whole.count)\r\n"
                    + "ETag: \"d1\"\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n" + String(decoding: rest, as: UTF8.self)
            }
            // Half the body, then the connection ends.
            return "HTTP/1.1 200 OK\r\nContent-Length: \(whole.count)\r\nETag: \"d1\"\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n"
                + String(decoding: whole[..<10_000], as: UTF8.self)
        }
        defer { server.stop() }
        let origin = try SwitchingOrigin(backendPort: server.port)
        let api = try origin.api(pins: [try origin.firstPin])
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pinned-resume-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination); ResumableDownload.pending(for: destination)?.discard() }
        let url = origin.baseURL + "/file"
        let cut = await api.download(route: .get(url), to: destination).result
        guard case .failure = cut else { Issue.record("the cut download succeeded"); return }
        let resume = try #require(ResumableDownload.pending(for: destination), "\(cut)")
        #expect(resume.offset == 10_000)
        origin.switchKey(toSecond: true)
        let refused = await api.download(route: .get(url), to: destination, resumingFrom: resume).result
        #expect(Self.isPinningFailure(refused), "\(refused)")
        #expect(requests.items.count == 1)
        origin.switchKey(toSecond: false)
        let again = try #require(ResumableDownload.pending(for: destination), "the refused resume lost the bytes")
        let file = try await api.download(route: .get(url), to: destination, resumingFrom: again).value
        // Resumed from the kept bytes (from one before their end: the overlap is checked).
        #expect((9_999...10_000).contains(file.resumedBytes), "\(file.resumedBytes)")
        #expect(try Data(contentsOf: file.fileURL) == whole)
        #expect(requests.items.last.flatMap { Self.field("Range", in: $0) } == "bytes=\(file.resumedBytes)-")
    }

    // MARK: A redirect

    /// A pinned host redirects to a host that is not pinned (`localhost`, the same relay): the
    /// redirect is followed and that host's answer read, the pin holding for the pinned host
    /// alone. The other way, an unpinned host redirecting to a pinned one whose key the pins do
    /// not name: the redirect fails pinned, and the pinned host is sent nothing.
    @Test func aRedirectBetweenAPinnedAndAnUnpinnedHostIsCheckedPerHost() async throws {
        let certificates = try TestCertificates(names: "IP:127.0.0.1,DNS:localhost")
        let location = Recorder<String>()
        let (server, requests) = try Self.backend { request, _ in
            let target = request.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            if target == "/start" {
                return "HTTP/1.1 302 Found\r\nLocation: \(location.items.last ?? "")/landed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            }
            return RawServer.Connection.response("at \(target) for \(Self.field("Host", in: request) ?? "")", headers: "Connection: close\r\n")
        }
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let pinned = try certificates.pin(ofKey: "server.key")
        func api(pin: String) throws -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: try CertificatePins(["127.0.0.1": [pin]])),
                        transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        }
        // Pinned, right key, to unpinned.
        location.append("https://localhost:\(relay.port)")
        let landed = try await (try api(pin: pinned).request(route: .get("https://127.0.0.1:\(relay.port)/start")) as Promise<String>).value
        #expect(landed == "at /landed for localhost:\(relay.port)")
        // Unpinned to pinned, whose pin is not the key it shows.
        location.append("https://127.0.0.1:\(relay.port)")
        let before = requests.items.count
        let refused = await (try api(pin: PinnedCacheFeatureTests.wrongPin).request(route: .get("https://localhost:\(relay.port)/start")) as Promise<String>).result
        #expect(Self.isPinningFailure(refused), "\(refused)")
        #expect(requests.items.count == before + 1, "\(requests.items.suffix(2))")
        #expect(requests.items.last.map { $0.hasPrefix("GET /start ") } == true)
    }
}
#endif
