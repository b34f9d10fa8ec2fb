#if os(Linux)
import CTernCurl
import Foundation
/// What is checked of the connection libcurl chose for an exchange before the request is
/// written on it, and what makes a connection not to be reused: the guard against answers
/// that are not the request's.
///
/// The request may not go on a connection where bytes came while it was idle, which it would
/// read as its answer; nor on one that carries another exchange when it does not speak HTTP/2,
/// whose streams alone keep answers apart. libcurl 7.88 shares an HTTP/1 connection once one
/// answer from its server said HTTP/2 (it then takes them all for HTTP/2 ones): the request
/// was written while another's answer was coming, and read the rest of it. Plain HTTP asks for
/// HTTP/1.1, which libcurl never shares, and refuses such an answer. Over HTTPS, HTTP/2 is what
/// TLS negotiated (ALPN), which no status line changes: such an answer is refused there too, and
/// from then on a connection to that origin carrying another exchange is refused, unless it
/// speaks HTTP/2. Nor, for a method that may not be sent twice, on a second connection once it
/// was written on a first: libcurl 7.88 sends a request again by itself when a reused connection
/// closes before any answer, asking nobody when there is no body to take back to its start.
/// The loop thread's, in its exchange's ``CurlExchange/owned``.
struct ConnectionGuard {
    /// "host:port" for an HTTPS request, whose connections may speak HTTP/2; `nil` for plain
    /// HTTP.
    let tlsOrigin: String?
    /// The HTTPS connection the exchange is on, from when libcurl chose it until the exchange
    /// leaves libcurl.
    private(set) var carrying: CurlConnections.Ends?
    /// Whether the request may be written once only: its method is not idempotent.
    let writesOnce: Bool
    /// Whether the request was written on a connection already.
    private(set) var hasWritten = false

    init(tlsOrigin: String?, writesOnce: Bool = false) {
        self.tlsOrigin = tlsOrigin
        self.writesOnce = writesOnce
    }

    /// Whether the request may be written on a connection.
    enum Verdict: Equatable {
        /// It may. Over HTTPS, `mayBeHTTP2` says whether an HTTP/2 status line may be believed:
        /// whether TLS negotiated HTTP/2, or cannot be asked; `nil` over plain HTTP.
        case write(mayBeHTTP2: Bool?)
        /// It may not: bytes were waiting on the connection.
        case strayInput
        /// It may not: the connection carries another exchange and does not speak HTTP/2.
        case sharedConnection
        /// It may not: it was written on another connection already (which closed unanswered),
        /// and its method may not be sent twice.
        case writtenAlready
    }

    /// Judges the connection with `ends` that libcurl chose, among the loop's `connections`;
    /// `negotiatedHTTP2` asks TLS whether it speaks HTTP/2 (1), not (0), or cannot say.
    mutating func check(_ ends: CurlConnections.Ends, among connections: CurlConnections,
                        negotiatedHTTP2: () -> Int32) -> Verdict {
        guard !(writesOnce && hasWritten) else { return .writtenAlready }
        guard !connections.hasStrayInput(ends) else { return .strayInput }
        guard let origin = tlsOrigin else {
            hasWritten = true
            return .write(mayBeHTTP2: nil)
        }
        leave(connections)   // libcurl runs it again
        let negotiated = negotiatedHTTP2()
        if negotiated != 1, connections.hasClaimedHTTP2(origin), connections.isCarrying(ends) { return .sharedConnection }
        connections.carry(ends)
        carrying = ends
        hasWritten = true
        // Where TLS cannot be asked, whatever the status line says, as before.
        return .write(mayBeHTTP2: negotiated != 0)
    }

    /// Tern runs the exchange again, knowing that it may be written again (nothing of its body
    /// reached the server, or its method may be sent twice).
    mutating func runsAgain() {
        hasWritten = false
    }

    /// The exchange has left libcurl, or is run again: its connection no longer carries it.
    mutating func leave(_ connections: CurlConnections) {
        if let carrying { connections.release(carrying) }
        carrying = nil
    }

    /// Whether `response`, to a request with `method`, can have no body (it answers a HEAD, or
    /// is a 204 or a 304) but declares one, over HTTP/1: a compliant server sends none of it,
    /// while a hostile one can send it after the next request went out on the connection, where
    /// no check could tell it from that request's answer. Such a connection is closed, not
    /// reused.
    static func declaresABodyThatCannotCome(_ response: ResponseHead, method: String) -> Bool {
        guard ResponseHead.hasNoBody(statusCode: response.statusCode, method: method), response.httpVersion?.hasPrefix("HTTP/1") == true else { return false }
        let length = response.headers["Content-Length"].map { $0.trimmingCharacters(in: .whitespaces) }
        return response.headers["Transfer-Encoding"] != nil || (length != nil && length != "0")
    }
}

extension CurlExchange {
    /// Whether the request may be written on the connection libcurl chose (see
    /// ``ConnectionGuard``); the body starts being read once it may.
    func connectionChosen(_ ends: CurlConnections.Ends) -> Bool {
        let connections = loop.connections
        switch owned.value.connection.check(ends, among: connections, negotiatedHTTP2: { tern_curl_negotiated_http2(curl, easy) }) {
        case .strayInput:
            stop = .strayInput
            return false
        case .sharedConnection:
            stop = .sharedConnection
            return false
        case .writtenAlready:
            stop = .writtenAlready(method: method)
            return false
        case .write(let mayBeHTTP2):
            guard bodyStartsAtItsStart() else { return false }
            leftTheLine()
            if let mayBeHTTP2 { response.head.mayBeHTTP2 = mayBeHTTP2 }
            startBody()
            return true
        }
    }

    /// Takes a body already read from back to its start before the request is written again:
    /// when Tern runs it again on a connection of its own, and when libcurl 7.88 goes down to
    /// HTTP/1.1 after an HTTP/2 HTTP_1_1_REQUIRED, where it does not ask (its seek callback), read
    /// on from the body's end, wrote a head and no body, and the request waited for its timeout.
    func bodyStartsAtItsStart() -> Bool {
        guard upload.readBytes > 0 else { return true }
        switch rewindBody(to: 0, from: SEEK_SET) {
        case .done:
            return true
        case .cannot:
            stop = .writtenAlready(method: method)
            return false
        case .failed:
            return false
        }
    }

    /// The exchange has left libcurl: the connection no longer carries it.
    func leftLibcurl() {
        owned.value.connection.leave(loop.connections)
    }
}
#endif
