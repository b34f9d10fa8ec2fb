import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An exchange that ended without an answer, as the pipeline saw it: what the transport
/// reported (or the collector, which stopped the transfer), and how far the response had come.
/// ``reading(method:url:isDownload:)`` is the one place where a failure, whatever its type and
/// whichever transport reported it, becomes an ``APIError``.
struct ExchangeFailure: Error {
    /// What ended the exchange.
    var error: any Error
    /// The response's head, if it came.
    var head: ResponseHead?
    /// How many bytes of the body had come.
    var receivedBytes = 0
    /// Whether fewer bytes came than the head announced.
    var cutShort = false

    /// What the failure means for the request.
    enum Reading {
        /// The request was cancelled.
        case cancelled
        /// A download's server did not go on where asked: start over from the first byte.
        case restartDownload
        /// The request fails with this error; `retryable` is what the retry policy judges, for
        /// a failure it may retry (the network's).
        case failed(APIError, retryable: (any Error)?)
    }

    /// What the failure means for a request sent with `method` to `url`; `isDownload` for a
    /// download, whose own limit is the one a body can pass.
    func reading(method: String, url: URL?, isDownload: Bool) -> Reading {
        switch error {
        case let error as URLError where error.code == .cancelled:
            return .cancelled
        case is DownloadRestart:
            return .restartDownload
        case let error as APIError:  // the download's file could not be written
            return .failed(error, retryable: nil)
        case let error as PinnedKeyMismatch:
            return .failed(.pinningFailed(.init(reason: .keyMismatch, host: url?.host ?? "", pins: error.pins.map { "sha256/" + $0 },
                                                presentedKey: error.presented.map { "sha256/" + $0 }, method: method, url: url)),
                           retryable: nil)
        case let error as BodyLimitExceeded:
            return .failed(.responseTooLarge(.init(limit: error.limit, receivedBytes: error.receivedBytes, declaredLength: error.declaredLength,
                                                   method: method, url: url, statusCode: error.statusCode, isDownload: isDownload)),
                           retryable: nil)
        case let error as TransferInterrupted:  // a transport of the app's that says how far the response came
            return ExchangeFailure(error: error.underlying, head: error.head, receivedBytes: error.receivedBytes, cutShort: cutShort)
                .reading(method: method, url: url, isDownload: isDownload)
        default:
            let cause = cause
            return .failed(.transportFailed(.init(underlying: cause, method: method, url: url, statusCode: head?.statusCode,
                                                  receivedBytes: head == nil ? nil : receivedBytes)), retryable: cause)
        }
    }

    /// What went wrong on the network. FoundationNetworking reports a body cut short as an
    /// unknown error (libcurl's "partial file"); Apple's URLSession, as what it is, which retry
    /// policies know.
    private var cause: any Error {
        guard cutShort, let error = error as? URLError, error.code == .unknown else { return error }
        return URLError(.networkConnectionLost, userInfo: error.userInfo)
    }
}
