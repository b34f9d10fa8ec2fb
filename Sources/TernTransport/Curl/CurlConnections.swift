#if os(Linux)
import CTernCurl

/// The HTTP/1 connections a loop's transfers left idle, and the check that no byte came on one
/// while it was idle: an HTTP/1 server speaks only when asked, so bytes waiting before a
/// request is written (a stray response, the body of a HEAD or a 204 sent late) would be read
/// as the next request's answer. libcurl 7.88 reuses such a connection; Tern refuses it, and the
/// request goes on a new one.
///
/// And which HTTPS connections carry an exchange, for the origins that once said HTTP/2 over
/// HTTP/1, which libcurl 7.88 then shares (see `CurlExchange.connectionChosen(_:)`).
///
/// Connections are known by both their ends, which libcurl hands the pre-request callback, and
/// checked by their socket, which must still be bound to that local port. HTTP/2 connections
/// are never checked: their frames say which stream each byte is for, and a server may send
/// frames at any time. The loop thread's alone.
final class CurlConnections {
    /// A connection's two ends. The local port alone does not tell connections apart: two to
    /// different peers may share one, and the second would hide the first's stray bytes.
    struct Ends: Hashable {
        let localPort: Int32
        let peerAddress: String
        let peerPort: Int32
    }

    /// The socket of each idle HTTP/1 connection, by its ends.
    private var http1Sockets: [Ends: Int32] = [:]
    /// How many idle connections ``http1Sockets`` may name before the closed ones are dropped.
    private var pruneAt = CurlConnections.fewestToPrune
    /// Twice the idle connections libcurl keeps by default (``CurlLoop/idleConnections``).
    static let fewestToPrune = 64
    /// How many exchanges each HTTPS connection carries, from when libcurl chose it for them
    /// until they left libcurl.
    private var carried: [Ends: Int] = [:]
    /// The HTTPS origins ("host:port") that answered with an HTTP/2 status line on a connection
    /// TLS says speaks HTTP/1: libcurl 7.88 has since taken their connections for shared ones.
    private var originsClaimingHTTP2: Set<String> = []
    private let curl: UnsafePointer<TernCurl>

    init(curl: UnsafePointer<TernCurl>) {
        self.curl = curl
    }

    /// Notes the connection `easy` finished its transfer on: checked before it is reused if it
    /// speaks HTTP/1 and is still open.
    func transferEnded(on easy: UnsafeMutableRawPointer) {
        var localPort = 0, peerPort = 0, version = 0
        var peerAddress: UnsafeMutablePointer<CChar>?
        var socket: Int32 = -1
        guard tern_curl_getinfo_long(curl, easy, CurlInfo.localPort, &localPort) == 0, localPort > 0,
              tern_curl_getinfo_long(curl, easy, CurlInfo.primaryPort, &peerPort) == 0,
              tern_curl_getinfo_string(curl, easy, CurlInfo.primaryAddress, &peerAddress) == 0, let peerAddress else { return }
        tern_curl_getinfo_socket(curl, easy, CurlInfo.activeSocket, &socket)
        tern_curl_getinfo_long(curl, easy, CurlInfo.httpVersion, &version)
        // CURL_HTTP_VERSION_1_0 and _1_1.
        let isOpenHTTP1 = socket >= 0 && (version == 1 || version == 2)
        idle(isOpenHTTP1 ? socket : nil, ends: Ends(localPort: Int32(localPort), peerAddress: String(cString: peerAddress), peerPort: Int32(peerPort)))
    }

    /// Notes `socket` as the idle HTTP/1 connection with `ends`, or `nil` for none to check.
    func idle(_ socket: Int32?, ends: Ends) {
        http1Sockets[ends] = socket
        if http1Sockets.count >= pruneAt { dropClosed() }
    }

    /// How many idle HTTP/1 connections the record names: closed ones too, until they are
    /// dropped.
    var notedHTTP1Count: Int { http1Sockets.count }

    /// Drops the connections closed since they went idle. libcurl closes one it finds dead
    /// without a word to Tern, and chooses it never again; each server that closed a connection
    /// while idle would otherwise leave an entry behind, for the process's life. The socket's
    /// number is asked which port it is bound to, since a newer connection soon has it; a peer's
    /// hang-up libcurl has yet to see stays until it has.
    private func dropClosed() {
        http1Sockets = http1Sockets.filter { ends, socket in tern_socket_is_bound_to(socket, ends.localPort) != 0 }
        pruneAt = max(Self.fewestToPrune, 2 * http1Sockets.count)
    }

    /// Whether the connection with `ends` carries an exchange now. libcurl may have finished
    /// it in the turn that now chooses the connection again, before the loop heard so.
    func isCarrying(_ ends: Ends) -> Bool { carried[ends] != nil }

    /// Notes that `origin` answered with an HTTP/2 status line over HTTP/1.
    func noteClaimOfHTTP2(by origin: String) {
        originsClaimingHTTP2.insert(origin)
    }

    /// Whether `origin` ever answered with an HTTP/2 status line over HTTP/1.
    func hasClaimedHTTP2(_ origin: String) -> Bool { originsClaimingHTTP2.contains(origin) }

    /// Notes that the connection with `ends` carries one more exchange.
    func carry(_ ends: Ends) {
        carried[ends] = (carried[ends] ?? 0) + 1
    }

    /// Notes that an exchange the connection with `ends` carried has left libcurl.
    func release(_ ends: Ends) {
        let count = (carried[ends] ?? 1) - 1
        carried[ends] = count > 0 ? count : nil
    }

    /// Whether the connection with `ends`, about to carry a request, has bytes nobody asked for
    /// waiting on it (or was closed by its peer).
    func hasStrayInput(_ ends: Ends) -> Bool {
        guard let socket = http1Sockets[ends] else { return false }
        switch tern_socket_has_input(socket, ends.localPort) {
        case 1: return true
        case 0: return false
        default:
            // Closed, and its number now another socket's.
            http1Sockets[ends] = nil
            return false
        }
    }
}
#endif
