#if os(Linux)
import Foundation
import Glibc
import Testing

/// `RawServer`'s accept loop rides out the errors that pass (no descriptor free for a moment),
/// and `stop()` touches only the listener it still holds: closed behind it, its number may be
/// another test's socket by then.
/// Three minutes: an exit test waits its turn behind every other (`ExitTestTurns`).
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct RawServerAcceptTests {
    /// The listener's descriptor, found by its socket.
    private static func listener(of server: RawServer) -> Int32? {
        TCPSockets.serverEnds(on: server.port).first { $0.state == "0A" }.flatMap { TCPSockets.descriptors(of: $0).first }
    }

    #if compiler(>=6.3)
    /// A connection that came while the process had no descriptor free is served once one is:
    /// the loop retries, where it used to close the listener, resetting the connection.
    @Test(.exitTest) func aConnectionThatCameWhileNoDescriptorWasFreeIsServedOnceOneIs() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let server = try RawServer { connection in
                    while connection.readRequest() != nil { guard connection.send(RawServer.Connection.response("served")) else { return } }
                }
                let client = try CurlConnectionsTests.socket(boundTo: 0)
                // The lowest descriptor free is the one a new descriptor would get: under a limit
                // of it, none can be made.
                let free = fcntl(0, F_DUPFD_CLOEXEC, 0)
                close(free)
                var saved = rlimit()
                getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
                var low = rlimit(rlim_cur: rlim_t(free), rlim_max: saved.rlim_max)
                guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &low) == 0 else { exit(2) }
                try CurlConnectionsTests.connect(client, to: Int32(server.port))
                // Until the server's accept has failed for want of a descriptor.
                let deadline = Date().addingTimeInterval(20)
                while server.failedAccepts == 0, Date() < deadline { usleep(1000) }
                setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
                let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                _ = send(client, request, request.utf8.count, Int32(MSG_NOSIGNAL))
                var answer = [UInt8](repeating: 0, count: 4096)
                var poller = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                let count = poll(&poller, 1, 20_000) > 0 ? recv(client, &answer, answer.count, 0) : -2
                print("failed accepts \(server.failedAccepts), answer \(count > 0 ? String(decoding: answer[..<count], as: UTF8.self) : "\(count) errno \(errno)")")
                server.stop()
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!printed.hasPrefix("failed accepts 0,") && printed.contains("\r\n\r\nserved"), "\(printed)")
    }
    #endif

    /// The listener failed for good (shut down behind the server's back): the loop ends but
    /// leaves it open, and `stop()` closes it then. Closed by the loop, its number went to the
    /// next socket made, which `stop()` then shut down.
    @Test(.timeLimit(.minutes(3))) func stopTouchesNoDescriptorTheServerNoLongerHolds() async throws {
        let server = try RawServer { _ in }
        let listener = try #require(Self.listener(of: server))
        shutdown(listener, Int32(SHUT_RDWR))
        #expect(await eventually { server.failedAccepts == 1 && !server.isAccepting })
        // The listener still open: its number is no other socket's.
        #expect(fcntl(listener, F_GETFD) != -1)
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        server.stop()
        // Neither end shut down.
        #expect(send(pair[0], "x", 1, Int32(MSG_NOSIGNAL)) == 1 && send(pair[1], "y", 1, Int32(MSG_NOSIGNAL)) == 1)
        #expect(TCPSockets.serverEnds(on: server.port).isEmpty)
    }
}
#endif
