#if os(Linux)
import Foundation
import FoundationNetworking
import CTernCurl

extension CurlExchange {
    /// Why an exchange stops its transfer (a callback returns what libcurl takes as "abort"),
    /// and so what its end reports, whatever libcurl's code for the abort.
    enum Stop {
        /// The receiver said stop; it knows why.
        case receiverSaidStop
        /// The response head was refused.
        case head(ResponseHeadReader.Refusal)
        /// The request body could not be read, or was not its stated length.
        case body(any Error)
        /// A chunked body declared more than the limit.
        case declaredTooLarge(BodyLimitExceeded)
        /// The connection libcurl chose had bytes waiting before the request was written.
        case strayInput
        /// The connection libcurl chose carries another exchange, and does not speak HTTP/2.
        case sharedConnection
        /// libcurl was sending the request, with `method`, again on a new connection (the
        /// reused one closed unanswered), and the method may not be sent twice.
        case writtenAlready(method: String)
        /// The body is not what its `Content-Encoding` says.
        case contentDecoding(ContentDecoder.Failure)
    }
}

/// What an exchange that libcurl ended reports: libcurl's code read with what the exchange
/// knows (why it stopped the transfer, its pins, how far the head came), so that an error says
/// what went wrong in the request's terms rather than in libcurl's.
enum CurlFailure {
    /// The error an exchange ends with, `nil` when it ended completely: `code` is libcurl's
    /// result (`nil` for a cancel), `head` how far the response's head came, `presentedKey` the
    /// key the server showed, read only if it matched none of `pinnedKeys`, `message` libcurl's
    /// words for a code.
    static func error(code: Int32?, stop: CurlExchange.Stop?, pinnedKeys: [String], presentedKey: () -> String? = { nil },
                      head: (status: Int, isComplete: Bool), url: URL, message: (Int32) -> String) -> (any Error)? {
        let error: (any Error)? = switch code {
        case nil: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: url])
        case CurlCode.ok?: nil
        case let code?:
            stop.flatMap { $0.error(endingWith: code, url: url) }
                ?? (code == CurlCode.pinnedKeyMismatch && !pinnedKeys.isEmpty ? PinnedKeyMismatch(pins: pinnedKeys, presented: presentedKey()) : nil)
                ?? refusedHead(code, head: head, url: url, message: message)
                ?? flooded(code, url: url, message: message)
                ?? CurlCode.urlError(code, message: message(code), url: url)
        }
        guard error == nil, !head.isComplete else { return error }
        return endedBeforeItsHead(status: head.status, url: url)
    }

    /// Why a transfer libcurl ended well is no answer when its head never ended: libcurl takes a
    /// reply without a status line for HTTP/0.9, and a head cut off by the connection's close for
    /// a whole one, though what it left out (a `Cache-Control: no-store`, a `Set-Cookie`, the
    /// body's length) is unknown. Browsers refuse such a head over HTTPS.
    static func endedBeforeItsHead(status: Int, url: URL) -> URLError {
        guard status > 0 else { return URLError(.badServerResponse, userInfo: [NSURLErrorFailingURLErrorKey: url]) }
        return URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the connection closed before the response's head ended",
                                                           NSURLErrorFailingURLErrorKey: url])
    }

    /// libcurl's own refusals of a head, as a response that cannot be trusted: a status code of
    /// more than three digits (CURLE_UNSUPPORTED_PROTOCOL), a line of the head, its status line
    /// or a field, past the 100 KB libcurl reads (CURLE_OUT_OF_MEMORY, as libcurl 7.88 says
    /// it, with no word of the line), or a first field line that continues the status line
    /// (CURLE_BAD_FUNCTION_ARGUMENT, as if Tern had called libcurl wrongly), or over HTTP/2 a
    /// head past the 128 KiB libcurl 7.88 keeps of one, before Tern's limit, or in more
    /// CONTINUATION frames than nghttp2 takes, which libcurl reports as a lost connection
    /// (CURLE_RECV_ERROR, nghttp2's -902 or -905): said here, where libcurl's words would
    /// mislead.
    static func refusedHead(_ code: Int32, head: (status: Int, isComplete: Bool), url: URL, message: (Int32) -> String) -> (any Error)? {
        guard !head.isComplete else { return nil }
        let why: String
        switch code {
        case 27: why = "a line of its head passed the 100 KB libcurl reads"
        case 43 where head.status != 0: why = "its first field line begins with a space, continuing the status line (obsolete line folding)"
        case 1 where head.status == 0: why = message(code)
        case 56 where message(code).contains("returned -902"), 56 where message(code).contains("returned -905"):
            let why = message(code).contains("returned -902") ? "passed the 128 KiB libcurl keeps of one over HTTP/2"
                : "came in more CONTINUATION frames than nghttp2 takes"
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the response's head \(why) (\(message(code)))",
                NSURLErrorFailingURLErrorKey: url,
            ])
        default: return nil
        }
        return ResponseHeadCheck.refusal(why, url: url)
    }

    /// An HTTP/2 connection nghttp2 closed because the server flooded it with frames that each
    /// ask for an answer (SETTINGS, PING, resets) faster than it read them, at any point of the
    /// exchange: the server's doing, which libcurl reports as a failed receive (CURLE_RECV_ERROR,
    /// nghttp2's -904) and would be read as the network's.
    static func flooded(_ code: Int32, url: URL, message: (Int32) -> String) -> URLError? {
        guard code == 56, message(code).contains("returned -904") else { return nil }
        return URLError(.badServerResponse, userInfo: [
            NSLocalizedDescriptionKey: "the server flooded the HTTP/2 connection with frames that each ask for an answer, and it was closed (\(message(code)))",
            NSURLErrorFailingURLErrorKey: url,
        ])
    }

    /// What to say of `code`, which libcurl `said`, for a request with `method`; `lackedADescriptor`
    /// is why the socket callback could make no socket (EMFILE or ENFILE), or 0.
    static func message(for code: Int32, said: String, method: String, lackedADescriptor: Int32 = 0) -> String {
        if code == CurlCode.rewindFailed {
            return "the connection closed, or the server refused the request, before any answer came; a \(method) is not sent again unasked"
        }
        if CurlCode.startedNoLookup(code, said: said) {
            return "\(said): the name was not looked up, the process having no file descriptor (or thread) left for it; "
                + "a request waits for one while others run; raise the process's limit on descriptors (ulimit -n) or threads"
        }
        // libcurl 7.88 reports a socket it could not make as a connection refused, with no
        // system error: the socket callback's note tells that case apart.
        guard code == CurlCode.couldntConnect, lackedADescriptor != 0 else { return said }
        return "\(said): no socket could be made, the process or the system has no file descriptor left "
            + "(\(String(cString: strerror(lackedADescriptor))); Tern's sockets leave the last \(TERN_DESCRIPTOR_RESERVE) to the rest of the process, "
            + "and a request waits for one while others run); "
            + "raise the process's limit (ulimit -n), or give the API a CurlTransport(maximumConnections:) that fits under it"
    }
}

extension CurlExchange.Stop {
    /// What an exchange that stopped for this reason reports, when libcurl ended it with `code`
    /// (the abort the stop caused); `nil` when the code says something else went wrong. A head
    /// refused is what went wrong whatever the code: over HTTP/2 the refusal may come back from
    /// inside nghttp2 as a failed receive.
    func error(endingWith code: Int32, url: URL) -> (any Error)? {
        let aborted = code == CurlCode.abortedByCallback || code == CurlCode.writeError || code == CurlCode.readError
            || code == CurlCode.rewindFailed
        var refusedHead = false
        if case .head = self { refusedHead = true }
        guard aborted || refusedHead else { return nil }
        switch self {
        case .receiverSaidStop:
            return nil
        case .body(let error):
            return error
        case .declaredTooLarge(let error):
            return error
        case .strayInput:
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the server sent bytes on a new connection before the request",
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .sharedConnection:
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "libcurl chose a connection that carries another request, and not over HTTP/2",
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .writtenAlready(let method):
            // As a request with a body that may not be sent again says it (CURLE_SEND_FAIL_REWIND).
            return URLError(.networkConnectionLost, userInfo: [
                NSLocalizedDescriptionKey: CurlFailure.message(for: CurlCode.rewindFailed, said: "", method: method),
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .head(.untrustworthy(let problem)):
            return ResponseHeadCheck.refusal(problem, url: url)
        case .head(.claimsHTTP2):
            return ResponseHeadCheck.refusal("its status line says HTTP/2 or later on a connection that speaks HTTP/1", url: url)
        case .contentDecoding(let failure):
            return URLError(.cannotDecodeContentData, userInfo: [
                NSLocalizedDescriptionKey: failure.reason,
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .head(.tooLarge):
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the response's head passed \(ResponseHeadReader.limit / 1024) KiB",
                NSURLErrorFailingURLErrorKey: url,
            ])
        }
    }
}
#endif
