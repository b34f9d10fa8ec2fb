import Foundation
import Testing
@testable import Tern
@testable import TernTransport

/// The one place where what ended an exchange becomes an ``APIError``, whichever transport
/// reported it: each kind of failure, read alone.
@Suite(.onTestThreads) struct ExchangeFailureTests {
    let url = URL(string: "https://shop.example/products")!
    var head: ResponseHead { ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headers: ["Content-Length": "10"])! }

    func reading(_ failure: ExchangeFailure, isDownload: Bool = false) -> ExchangeFailure.Reading {
        failure.reading(method: "GET", url: url, isDownload: isDownload)
    }

    /// The request failed with an error that `check` accepts, and may be retried only if `retryable`.
    func expectFailed(_ reading: ExchangeFailure.Reading, retryable: Bool, _ check: (APIError) -> Bool) {
        guard case .failed(let error, let cause) = reading else {
            Issue.record("not a failure: \(reading)")
            return
        }
        #expect(check(error), "\(error)")
        #expect((cause != nil) == retryable, "\(String(describing: cause))")
    }

    @Test func aCancelStaysACancelHoweverFarTheResponseCame() {
        guard case .cancelled = reading(ExchangeFailure(error: URLError(.cancelled), head: head, receivedBytes: 4, cutShort: true)) else {
            Issue.record("a cancel was read as something else")
            return
        }
    }

    @Test func aDownloadsServerThatDidNotGoOnRestartsIt() {
        guard case .restartDownload = reading(ExchangeFailure(error: DownloadRestart(), head: head)) else {
            Issue.record("no restart")
            return
        }
    }

    @Test func ternsOwnErrorsPassAsTheyAre() {
        let disk = APIError.fileFailed(.init(reason: .writeFailed, destination: URL(fileURLWithPath: "/tmp/x"), underlying: CocoaError(.fileWriteOutOfSpace)))
        expectFailed(reading(ExchangeFailure(error: disk)), retryable: false) { if case .fileFailed = $0 { true } else { false } }
    }

    @Test func aKeyMismatchIsAPinningFailureNamingTheHostAndPins() {
        expectFailed(reading(ExchangeFailure(error: PinnedKeyMismatch(pins: ["abc="]))), retryable: false) { error in
            guard case .pinningFailed(let failure) = error else { return false }
            return failure.host == "shop.example" && failure.pins == ["sha256/abc="] && failure.reason == .keyMismatch
        }
    }

    @Test func aBodyOverTheLimitIsTooLargeAndNotRetried() {
        let limit = BodyLimitExceeded(limit: 8, receivedBytes: 12, declaredLength: nil, statusCode: 200)
        expectFailed(reading(ExchangeFailure(error: limit, head: head, receivedBytes: 12)), retryable: false) { error in
            guard case .responseTooLarge(let failure) = error else { return false }
            return failure.limit == 8 && failure.receivedBytes == 12 && failure.statusCode == 200 && failure.url == url
                && failure.description.contains("Raise the limit with APIConfiguration(maximumResponseSize:)")
        }
        // A download's limit is its own, and its description names what raises it.
        expectFailed(reading(ExchangeFailure(error: limit, head: head, receivedBytes: 12), isDownload: true), retryable: false) { error in
            guard case .responseTooLarge(let failure) = error else { return false }
            return failure.isDownload && failure.description.contains("over the download's limit of 8 bytes")
                && failure.description.hasSuffix("Raise the limit with download(route:to:maximumSize:).")
        }
    }

    /// FoundationNetworking's "unknown" for a body cut short is what it is: a lost connection,
    /// which retry policies know.
    @Test func aBodyCutShortIsALostConnection() {
        let unknown = URLError(.unknown)
        expectFailed(reading(ExchangeFailure(error: unknown, head: head, receivedBytes: 4, cutShort: true)), retryable: true) { error in
            guard case .transportFailed(let failure) = error else { return false }
            return failure.urlError?.code == .networkConnectionLost && failure.statusCode == 200 && failure.receivedBytes == 4
        }
        expectFailed(reading(ExchangeFailure(error: unknown, head: head, receivedBytes: 10)), retryable: true) { error in
            guard case .transportFailed(let failure) = error else { return false }
            return failure.urlError?.code == .unknown
        }
    }

    /// Before the head, the failure says nothing of a status or a body.
    @Test func aFailureBeforeTheHeadHasNoStatus() {
        expectFailed(reading(ExchangeFailure(error: URLError(.cannotConnectToHost))), retryable: true) { error in
            guard case .transportFailed(let failure) = error else { return false }
            return failure.statusCode == nil && failure.receivedBytes == nil && failure.urlError?.code == .cannotConnectToHost
        }
    }

    /// A transport of the app's may say how far the response came in a `TransferInterrupted`.
    @Test func anInterruptedTransferOfAnyTransportIsReadInside() {
        let interrupted = TransferInterrupted(head: head, receivedBytes: 7, underlying: URLError(.networkConnectionLost))
        expectFailed(reading(ExchangeFailure(error: interrupted)), retryable: true) { error in
            guard case .transportFailed(let failure) = error else { return false }
            return failure.statusCode == 200 && failure.receivedBytes == 7 && failure.urlError?.code == .networkConnectionLost
        }
    }
}
