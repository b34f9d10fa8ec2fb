#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// An exchange that libcurl ended before the request could be answered, run again once on a
/// connection of its own: the connection libcurl chose was refused before anything of the
/// request was written (``ConnectionGuard``), or a kept HTTP/2 connection ended as the request
/// went out on it. One that no socket could be made for runs again once another has ended. The loop's state decides whether it runs again (``CurlLoopState``); the
/// exchange says whether it may, and readies its body when it does.
extension CurlExchange {
    /// Whether the exchange, which libcurl ended with `code`, may go again on a new connection.
    /// A GOAWAY that came as the request went out, for a stream the server did not take (RFC
    /// 9113, section 6.8), fails it with `CURLE_HTTP2` in libcurl 7.88 rather than send it again:
    /// it may, when its method may be sent twice and its body taken back to its start.
    func mayRunAgain(after code: Int32) -> Bool {
        guard !response.head.isComplete else { return false }
        switch stop {
        case .strayInput?, .sharedConnection?:
            return upload.readBytes == 0
        case nil where crossedAGoAway(code):
            return upload.mayRewind(method: method)
        default:
            return false
        }
    }

    /// Whether libcurl ended the exchange with `code` as its kept HTTP/2 connection ended, before
    /// any byte of the answer: as when a GOAWAY crossed the request.
    func crossedAGoAway(_ code: Int32) -> Bool {
        guard code == CurlCode.http2, response.head.status == 0 else { return false }
        var connections = 0
        return tern_curl_getinfo_long(curl, easy, CurlInfo.newConnections, &connections) == 0 && connections == 0
    }

    /// Why a request that crossed a GOAWAY failed: it was not sent again, or was and crossed
    /// another; said as HTTP/1.1's closed connection is.
    func goAwayError() -> URLError {
        let again = HTTPMethod(rawValue: method).isIdempotent ? "" : "; a \(method) is not sent again unasked"
        return URLError(.networkConnectionLost, userInfo: [
            NSLocalizedDescriptionKey: "the HTTP/2 connection ended before any answer came\(again)",
            NSURLErrorFailingURLErrorKey: url,
        ])
    }

    /// Whether libcurl ended the exchange with `code` because no socket could be made for it,
    /// or its host's name could not be looked up while the process was short of descriptors
    /// (libcurl's pair of sockets for each lookup's thread, and the lookup's own files and
    /// sockets, are made outside Tern's reserve; nothing of the request was sent), or a file of
    /// its body could not be opened (``OwnFiles``; the body was cut short, so the server cannot
    /// have acted on it): it may wait for another exchange to end and free one.
    func lackedADescriptor(after code: Int32) -> Bool {
        guard response.head.status == 0 else { return false }
        if case .body(let error)? = stop { return OwnFiles.lackedADescriptor(error) }
        guard upload.readBytes == 0 else { return false }
        if code == CurlCode.couldntConnect { return notes.pointee.lacked_a_descriptor != 0 }
        return CurlCode.isLookup(code) && (CurlCode.startedNoLookup(code, said: said(code)) || Self.isShortOfDescriptors())
    }

    /// Whether fewer descriptors are free than a lookup takes (a pair of sockets for its
    /// thread, then a file or a socket of its own, with one to spare): one that failed then may
    /// have failed for want of one. Not the whole reserve: Tern's own sockets, many running,
    /// fill every descriptor below it, and a name that does not resolve would wait for them.
    private static func isShortOfDescriptors() -> Bool {
        // The lowest number free, whatever the process has closed.
        let probe = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard probe >= 0 else { return errno == EMFILE || errno == ENFILE }
        defer { close(probe) }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return false }
        return rlim_t(probe) + 4 >= limit.rlim_cur
    }

    /// Readies an exchange that lacked a descriptor to run again, on any connection: one that
    /// another exchange left idle is as good as a new one. Returns `false` when its body cannot
    /// be made again: the exchange then ends with why.
    func readyToRunAgain() -> Bool {
        notes.pointee.lacked_a_descriptor = 0
        owned.value.connection.runsAgain()
        guard case .body? = stop else {
            stop = nil
            return true
        }
        stop = nil
        if case .failed(let error) = upload.restart() {
            stop = .body(error)
            return false
        }
        return true
    }

    /// Readies the exchange to run again, on a connection of its own, its body taken back to its
    /// start if libcurl read any of it. Returns `false` when the body cannot be read again: the
    /// exchange then ends with why.
    func useNewConnection() -> Bool {
        stop = nil
        owned.value.connection.runsAgain()
        // Before the new connection is made: a body that cannot be made again opens none.
        guard bodyStartsAtItsStart() else { return false }
        CurlEasyOptions(curl: curl, easy: easy).setLong(CurlOption.freshConnect, 1)
        return true
    }
}
#endif
