#if os(Linux)
import Foundation
import FoundationNetworking

/// What a libcurl result code means as a `URLError`, the error retry policies and callers
/// already know from URLSession.
enum CurlCode {
    static let ok: Int32 = 0
    /// CURLE_COULDNT_CONNECT, which libcurl 7.88 also says when no socket could be made.
    static let couldntConnect: Int32 = 7
    static let writeError: Int32 = 23
    static let readError: Int32 = 26
    static let abortedByCallback: Int32 = 42
    /// CURLE_HTTP2: the HTTP/2 connection failed, a GOAWAY among the causes.
    static let http2: Int32 = 16
    /// CURLE_SEND_FAIL_REWIND: libcurl would have sent the request again (its connection closed,
    /// or its HTTP/2 stream was refused, before any answer) but its body could not start over.
    static let rewindFailed: Int32 = 65
    /// CURLE_SSL_PINNEDPUBKEYNOTMATCH: the server's key is none of the pinned ones.
    static let pinnedKeyMismatch: Int32 = 90

    /// The `URLError` for `code`, with libcurl's message and the URL.
    static func urlError(_ code: Int32, message: String, url: URL) -> URLError {
        let coded: URLError.Code = switch code {
        case 1: .unsupportedURL                     // CURLE_UNSUPPORTED_PROTOCOL
        case 3: .badURL                             // CURLE_URL_MALFORMAT
        case 5, 6: startedNoLookup(code, said: message) ? .cannotConnectToHost : .cannotFindHost  // CURLE_COULDNT_RESOLVE_PROXY, _HOST
        case 7: .cannotConnectToHost                // CURLE_COULDNT_CONNECT
        case 8, 16, 92: .badServerResponse          // CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, _STREAM
        case 18, 55, 56: .networkConnectionLost     // CURLE_PARTIAL_FILE, CURLE_SEND_ERROR, _RECV_ERROR
        case 28: .timedOut                          // CURLE_OPERATION_TIMEDOUT
        case 35, 77: .secureConnectionFailed        // CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE
        case 52: .badServerResponse                 // CURLE_GOT_NOTHING: an empty reply
        case 58: .clientCertificateRejected         // CURLE_SSL_CERTPROBLEM
        case 60: peerFailedVerification(message)    // CURLE_PEER_FAILED_VERIFICATION
        case 61: .cannotDecodeContentData           // CURLE_BAD_CONTENT_ENCODING
        case rewindFailed: .networkConnectionLost
        case abortedByCallback: .cancelled
        default: .unknown
        }
        let kind = brokeItsChunkFraming(message) ? .badServerResponse : coded
        return URLError(kind, userInfo: [
            NSLocalizedDescriptionKey: code == 60 ? withTrustHint(message) : message,
            NSURLErrorFailingURLErrorKey: url,
            "CURLcode": Int(code),
        ])
    }

    /// Whether libcurl, which ended a transfer with `code` and `said` why, could not start the
    /// thread that looks a host's or proxy's name up (a pair of sockets, then a thread, made for
    /// each lookup): the process, not the name, is at fault; it had no descriptor or thread left.
    static func startedNoLookup(_ code: Int32, said: String) -> Bool {
        isLookup(code) && said.contains("thread failed to start")
    }

    /// Whether `code` says a host's or a proxy's name was not looked up.
    static func isLookup(_ code: Int32) -> Bool {
        code == 5 || code == 6
    }

    /// Whether libcurl's words say a chunked body's framing broke ("Illegal or missing
    /// hexadecimal sequence in chunked-encoding", "Failed reading the chunked-encoded stream"):
    /// the server's doing, which libcurl's code (a failed receive, or none) would have read as
    /// the network's, or as nothing in particular.
    static func brokeItsChunkFraming(_ message: String) -> Bool {
        message.contains("chunked-encod")
    }

    /// FoundationNetworking's error for a response whose chunked framing broke, which it leaves
    /// `.unknown` or a lost connection with its libcurl's words: coded as over ``CurlTransport``.
    static func brokenChunkFraming(in error: any Error) -> URLError? {
        guard let error = error as? URLError, [.unknown, .networkConnectionLost].contains(error.code),
              let message = error.userInfo[NSLocalizedDescriptionKey] as? String, brokeItsChunkFraming(message) else { return nil }
        return URLError(.badServerResponse, userInfo: error.userInfo)
    }

    /// FoundationNetworking's error for a server certificate its libcurl refused, which it
    /// leaves `.unknown` with libcurl's words: coded as over ``CurlTransport``, so that a
    /// caller can tell it from any other failure. `nil` for any other error.
    static func certificateRefusal(in error: any Error) -> URLError? {
        guard let error = error as? URLError, error.code == .unknown,
              let message = error.userInfo[NSLocalizedDescriptionKey] as? String,
              ["SSL certificate problem:", "SSL: no alternative certificate subject name", "SSL: certificate subject name"]
                .contains(where: message.hasPrefix) else { return nil }
        var info = error.userInfo
        info[NSLocalizedDescriptionKey] = withTrustHint(message)
        return URLError(peerFailedVerification(message), userInfo: info)
    }

    /// libcurl's words for a certificate no trusted authority signed, with where to trust a
    /// private one: the first thing a test server or a company's own authority meets.
    private static func withTrustHint(_ message: String) -> String {
        guard message.contains("local issuer certificate") || message.contains("self-signed") || message.contains("self signed") else { return message }
        return message + " (no authority this transport trusts signed it; CurlTransport(trusting:) trusts a private one)"
    }

    /// A certificate that failed verification, as URLSession tells the cases apart: out of its
    /// dates (OpenSSL's words, in libcurl's message), or not trusted for this host at all.
    private static func peerFailedVerification(_ message: String) -> URLError.Code {
        if message.contains("certificate has expired") { return .serverCertificateHasBadDate }
        if message.contains("certificate is not yet valid") { return .serverCertificateNotYetValid }
        return .serverCertificateUntrusted
    }
}
#endif
