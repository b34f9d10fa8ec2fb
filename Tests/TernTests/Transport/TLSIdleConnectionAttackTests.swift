#if os(Linux)
import Foundation
import Glibc
import Testing
import Tern
import TernTransport

/// HTTPS connections left idle between requests, against a TLS server that speaks when nobody
/// asked: it sends `close_notify` and keeps the TCP connection open (or closes it), or sends a
/// stray second response, late, in the first answer's TLS record, or in a record of its own
/// right after it. The next requests each get their own answer.
///
/// Over libcurl only: FoundationNetworking's URLSession trusts only the system's authorities,
/// at a path fixed in it, so it cannot reach a server of the tests' own authority.
@Suite(.onTestThreads, .timeLimit(.minutes(2)), .enabled(if: TestTransport.isCurl, "URLSession on Linux cannot trust the tests' authority"))
struct TLSIdleConnectionAttackTests {
    /// What the server does once it has answered the first request on its first connection.
    enum Hostility: String, CaseIterable, Sendable {
        case closeNotifyKeepingTheConnection, closeNotifyThenClose
        case strayResponseLate, strayResponseInTheSameRecord, strayResponseInTheNextRecord
    }

    /// A TLS server with the tests' certificate that answers each request with its path, and
    /// after the first answer on its first connection does what `hostility` says, then notes it
    /// in `done`.
    final class HostileTLSServer: @unchecked Sendable {
        let certificates: TestCertificates
        let port: Int
        private let listener: Int32
        private let stopped = Recorder<Bool>()
        let done = Recorder<Int>()
        /// How many connections it accepted, and what each was asked, by connection.
        let asked = Recorder<String>()

        init(_ hostility: Hostility) throws {
            certificates = try TestCertificates()
            let context = try OpenSSL.shared.get().serverContext(
                certificate: certificates.directory.appendingPathComponent("server.pem").path,
                key: certificates.directory.appendingPathComponent("server.key").path, offeringHTTP2: false)
            let (listener, port) = try CurlConnectionsTests.listener()
            self.listener = listener
            self.port = Int(port)
            let (stopped, done, asked) = (stopped, done, asked)
            Thread {
                var index = 0
                while stopped.items.isEmpty {
                    var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, 50) > 0 else { continue }
                    let client = CloseOnExec.accept(listener)
                    guard client >= 0 else { continue }
                    let connection = index
                    index += 1
                    Thread {
                        Self.serve(client, connection: connection, context: context, hostility: hostility, stopped: stopped, done: done, asked: asked)
                    }.start()
                }
                close(listener)
            }.start()
        }

        deinit { stopped.append(true) }

        var baseURL: String { "https://127.0.0.1:\(port)" }

        static func response(_ body: String) -> String {
            "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nContent-Type: text/plain\r\n\r\n\(body)"
        }

        private static func serve(_ client: Int32, connection: Int, context: OpenSSL.Context, hostility: Hostility,
                                  stopped: Recorder<Bool>, done: Recorder<Int>, asked: Recorder<String>) {
            var pipe = sigset_t()
            sigemptyset(&pipe)
            sigaddset(&pipe, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipe, nil)
            defer { close(client) }
            guard let session = context.accept(client) else { return }
            defer { session.close() }
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16_384)
            func write(_ text: String) -> Bool { Array(text.utf8).withUnsafeBytes { session.write($0[...]) } }
            var isFirst = connection == 0
            while stopped.items.isEmpty {
                // The next request's head (GETs: no body).
                guard let end = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) else {
                    if !session.hasPending {
                        var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                        guard poll(&descriptor, 1, 200) >= 0 else { return }
                        if descriptor.revents == 0 { continue }
                    }
                    let count = chunk.withUnsafeMutableBytes { session.read(into: $0) }
                    guard count > 0 else { return }
                    buffer += chunk[..<count]
                    continue
                }
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                let path = String(head.split(separator: " ").dropFirst().first ?? "/").dropFirst()
                asked.append("\(connection) \(path)")
                guard isFirst else {
                    guard write(response(String(path))) else { return }
                    continue
                }
                isFirst = false
                let stray = response("stray")
                switch hostility {
                case .strayResponseInTheSameRecord:
                    guard write(response(String(path)) + stray) else { return }
                case .strayResponseInTheNextRecord:
                    guard write(response(String(path))), write(stray) else { return }
                case .strayResponseLate:
                    guard write(response(String(path))) else { return }
                    usleep(100_000)
                    guard write(stray) else { return }
                case .closeNotifyKeepingTheConnection, .closeNotifyThenClose:
                    guard write(response(String(path))) else { return }
                    usleep(100_000)
                    _ = session.sendCloseNotify()
                    if hostility == .closeNotifyThenClose {
                        done.append(connection)
                        return
                    }
                    done.append(connection)
                    // Keeps the connection open, answering nothing more on it: a request written
                    // here waits for ever (for the API's timeout).
                    while stopped.items.isEmpty {
                        var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                        guard poll(&descriptor, 1, 200) >= 0 else { return }
                        if descriptor.revents != 0 || session.hasPending {
                            // The client's own close_notify reads as the end (0); a request, as data.
                            let count = chunk.withUnsafeMutableBytes { session.read(into: $0) }
                            guard count > 0 else { return }
                            asked.append("\(connection) written after close_notify: " + String(decoding: chunk[..<count], as: UTF8.self))
                        }
                    }
                    return
                }
                done.append(connection)
            }
        }
    }

    /// A server behaving as `hostility` says once its first answer is sent, and an API that
    /// has had that answer.
    private func answeredOnce(_ hostility: Hostility) async throws -> (HostileTLSServer, AbstractAPI) {
        let server = try HostileTLSServer(hostility)
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: transport, responseQueue: .global())
        let first: String = try await api.request(route: .get(server.baseURL + "/first")).value
        #expect(first == "first")
        #expect(await eventually { !server.done.items.isEmpty })
        return (server, api)
    }

    @Test(arguments: Hostility.allCases)
    func theNextRequestOnAnIdleTLSConnectionGetsItsOwnAnswer(hostility: Hostility) async throws {
        let (server, api) = try await answeredOnce(hostility)
        // The server's bytes are sent: on loopback, in the client's socket now.
        try await Task.sleep(for: .milliseconds(50))
        for index in 0..<4 {
            let result = await (api.request(route: .get(server.baseURL + "/next\(index)")) as Promise<String>).result
            #expect((try? result.get()) == "next\(index)", "\(hostility): \(result)")
        }
        #expect(!server.asked.items.contains { $0.contains("written after close_notify") }, "\(server.asked.items)")
    }

    /// The same, with requests going out together as the server misbehaves: none gets
    /// another's answer or the stray one.
    @Test(arguments: Hostility.allCases)
    func requestsTogetherOnIdleTLSConnectionsGetTheirOwnAnswers(hostility: Hostility) async throws {
        let (server, api) = try await answeredOnce(hostility)
        try await Task.sleep(for: .milliseconds(50))
        let promises: [Promise<String>] = (0..<6).map { api.request(route: .get(server.baseURL + "/together\($0)")) }
        for (index, promise) in promises.enumerated() {
            let result = await promise.result
            #expect((try? result.get()) == "together\(index)", "\(hostility): \(result)")
        }
    }
}
#endif
