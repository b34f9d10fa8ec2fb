import Foundation
import Testing
import Tern
import TernTesting

/// A request cancelled while its server stalls, at each step of the answer (connected and
/// unread, the request read, part of the head, the whole head, part of the body, in the middle of
/// a chunk): the client closes its socket, on each transport. Checked on the client's side, in
/// the kernel's list of this process's sockets, not only by the server seeing it go: a socket
/// left open is a descriptor leaked, or a connection pooled with an answer cut in the middle.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CancelledTransferSocketTests {
    /// How far the server gets before it stalls.
    enum Step: String, CaseIterable, Sendable {
        case connected, requestRead, partOfHead, head, partOfBody, midChunk

        /// What the server sends once it has read the request.
        var sent: String {
            switch self {
            case .connected, .requestRead: ""
            case .partOfHead: "HTTP/1.1 200 OK\r\nContent-Le"
            case .head: "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nContent-Type: application/octet-stream\r\n\r\n"
            case .partOfBody: "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "b", count: 3000)
            case .midChunk: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2000\r\n" + String(repeating: "c", count: 100)
            }
        }
    }

    enum Kind: String, CaseIterable, Sendable {
        case curl, urlsession

        func make() throws -> any Transport {
            switch self {
            case .curl:
                #if os(Linux)
                return try CurlTransport()
                #else
                return URLSessionTransport()
                #endif
            case .urlsession:
                return URLSessionTransport()
            }
        }

        /// Whether its sockets are close-on-exec: FoundationNetworking's are not, and a child
        /// process another test starts meanwhile (an exit test's) holds the connection open.
        var closesOnExec: Bool {
            #if canImport(FoundationNetworking)
            self == .curl
            #else
            true
            #endif
        }
    }

    @Test(arguments: Kind.allCases, Step.allCases)
    func aCancelledStalledRequestClosesItsSocket(kind: Kind, step: Step) async throws {
        let events = Recorder<String>()
        let server = try RawServer { connection in
            if step != .connected {
                guard connection.readRequest() != nil else { return }
                events.append("request")
                guard step.sent.isEmpty || connection.send(step.sent) else { return }
            }
            events.append("stalled")
            events.append(connection.waitForHangUp(upTo: 60) ? "hung up" : "still open")
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: kind.make())
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/held"))
        // The client's end is open, and it has read what was sent (libcurl or FoundationNetworking
        // has seen the head or the body so far): the cancel comes at that step of the answer.
        let ready = await eventually {
            let ends = TCPSockets.clientEnds(to: server.port)
            return events.items.contains("stalled") && ends.count == 1 && ends.allSatisfy { $0.unread == 0 }
        }
        #expect(ready, "\(events.items): \(TCPSockets.describe(port: server.port))")
        promise.cancel()
        #expect(await apiError(of: promise)?.isCancellation == true)
        let closed = await eventually { TCPSockets.clientEnds(to: server.port).isEmpty }
        #expect(closed, "the client's socket is still open: \(TCPSockets.describe(port: server.port))")
        if kind.closesOnExec {
            #expect(await eventually { events.items.last == "hung up" }, "\(events.items)")
        }
        #expect(server.connections == 1)
    }
}

#if os(Linux)
extension CancelledTransferSocketTests {
    /// A request stalled by its server, then a child process started the way a program that
    /// knows nothing of descriptors starts one (inheriting each not marked close-on-exec), as
    /// Swift Testing starts an exit test's: cancelled, the request's connection closes at once,
    /// not when the child ends. libcurl 7.88 opens its sockets inheritable; Tern has it open them
    /// close-on-exec. (FoundationNetworking's libcurl does not: over URLSession the connection
    /// stays open until the child ends, which Tern cannot change.)
    @Test func aChildProcessDoesNotKeepACancelledConnectionOpen() async throws {
        let events = Recorder<String>()
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            events.append("request")
            events.append(connection.waitForHangUp(upTo: 60) ? "hung up" : "still open")
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: CurlTransport())
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/held"))
        #expect(await eventually { events.items.contains("request") && TCPSockets.clientEnds(to: server.port).count == 1 })
        let descriptors = TCPSockets.clientEnds(to: server.port).flatMap(TCPSockets.descriptors(of:))
        #expect(descriptors.count == 1)
        #expect(descriptors.allSatisfy { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 }, "libcurl's socket is inherited by child processes")
        let child = try ChildProcess(sleepingFor: 60)
        defer { child.kill() }
        promise.cancel()
        #expect(await apiError(of: promise)?.isCancellation == true)
        #expect(await eventually { TCPSockets.clientEnds(to: server.port).isEmpty }, "the client's descriptor is still open")
        #expect(await eventually(timeout: 10) { events.items.last == "hung up" },
                "the connection outlived its cancel: \(TCPSockets.describe(port: server.port))")
    }
}
#endif

/// A child process that inherits every descriptor not marked close-on-exec, as one started by
/// a program that does not close them would (`posix_spawn` with no file actions, `fork`).
struct ChildProcess {
    let pid: pid_t

    init(sleepingFor seconds: Int) throws {
        let words: [String] = ["/bin/sleep", "\(seconds)"]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ)
        guard spawned == 0 else { throw TestError(code: Int(spawned)) }
        self.pid = pid
    }

    /// Ends the child and waits for it.
    func kill() {
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}

extension RawServer.Connection {
    /// Waits until the client closes the connection, reading and dropping what it sends;
    /// `false` if `seconds` pass first.
    func waitForHangUp(upTo seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 || errno == EINTR else { return false }
            guard poller.revents != 0 else { continue }
            let count = scratch.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EINTR) { return true }
        }
        return false
    }
}
