#if os(Linux)
import CTernCurl

/// The HTTP/1 connections a loop's transfers left idle, and the check that no byte came on one
/// while it was idle: an HTTP/1 server speaks only when asked, so bytes waiting before a
/// request is written (a stray response, the body of a HEAD or a 204 sent late) would be read
/// as the next request's answer. libcurl 7.88 reuses such a connection; Tern refuses it, and the
/// request goes on a new one.
///
/// Connections are known by their local port, which libcurl hands the pre-request callback, and
/// checked by their socket, which must still be bound to that port. HTTP/2 connections are
/// never checked: their frames say which stream each byte is for, and a server may send frames
/// at any time. The loop thread's alone.
final class CurlConnections {
    /// The socket of each idle HTTP/1 connection, by its local port.
    private var http1Sockets: [Int32: Int32] = [:]
    private let curl: UnsafePointer<TernCurl>

    init(curl: UnsafePointer<TernCurl>) {
        self.curl = curl
    }

    /// Notes the connection `easy` finished its transfer on: checked before it is reused if it
    /// speaks HTTP/1 and is still open.
    func transferEnded(on easy: UnsafeMutableRawPointer) {
        var port = 0
        var socket: Int32 = -1
        var version = 0
        guard tern_curl_getinfo_long(curl, easy, CurlInfo.localPort, &port) == 0, port > 0 else { return }
        tern_curl_getinfo_socket(curl, easy, CurlInfo.activeSocket, &socket)
        tern_curl_getinfo_long(curl, easy, CurlInfo.httpVersion, &version)
        // CURL_HTTP_VERSION_1_0 and _1_1.
        http1Sockets[Int32(port)] = socket >= 0 && (version == 1 || version == 2) ? socket : nil
    }

    /// Whether the connection on `localPort`, about to carry a request, has bytes nobody asked
    /// for waiting on it (or was closed by its peer).
    func hasStrayInput(localPort: Int32) -> Bool {
        guard let socket = http1Sockets[localPort] else { return false }
        switch tern_socket_has_input(socket, localPort) {
        case 1: return true
        case 0: return false
        default:
            // Closed, and its number now another socket's.
            http1Sockets[localPort] = nil
            return false
        }
    }
}
#endif
