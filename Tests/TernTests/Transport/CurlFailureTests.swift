#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// libcurl's codes read with what the exchange knows, alone. Over libcurl, the same errors are
/// `HostileHeadTests`', `ScrambledAnswerTests`', `CertificatePinningTests`', `ResendingTests`' and
/// `CurlTransportTests`'.
@Suite(.onTestThreads) struct CurlFailureTests {
    let url = URL(string: "http://127.0.0.1/answer")!
    let whole = (status: 200, isComplete: true)

    func error(_ code: Int32?, stop: CurlExchange.Stop? = nil, pins: [String] = [], head: (status: Int, isComplete: Bool)? = nil) -> (any Error)? {
        CurlFailure.error(code: code, stop: stop, pinnedKeys: pins, head: head ?? whole, url: url) { "libcurl said \($0)" }
    }

    func urlError(_ error: (any Error)?) -> URLError? { error as? URLError }

    @Test func aCancelAndAWholeAnswer() {
        #expect(urlError(error(nil))?.code == .cancelled)
        #expect(urlError(error(nil, head: (0, false)))?.code == .cancelled)
        #expect(error(CurlCode.ok) == nil)
    }

    /// libcurl takes a reply without a status line, and a head cut off, for answers.
    @Test func anAnswerWhoseHeadNeverEndedIsNone() {
        #expect(urlError(error(CurlCode.ok, head: (0, false)))?.code == .badServerResponse)
        let cut = urlError(error(CurlCode.ok, head: (200, false)))
        #expect(cut?.code == .networkConnectionLost)
        #expect(cut?.localizedDescription.contains("before the response's head ended") == true)
    }

    /// A stop is what the abort it caused reports; another code says something else went wrong.
    @Test func aStopIsReportedForTheAbortItCaused() {
        #expect(urlError(error(CurlCode.abortedByCallback, stop: .strayInput))?.localizedDescription.contains("before the request") == true)
        #expect(urlError(error(CurlCode.abortedByCallback, stop: .sharedConnection))?.localizedDescription.contains("HTTP/2") == true)
        let limit = BodyLimitExceeded(limit: 10, receivedBytes: 0, declaredLength: 20, statusCode: 200)
        #expect(error(CurlCode.writeError, stop: .declaredTooLarge(limit)) as? BodyLimitExceeded == limit)
        #expect(urlError(error(CurlCode.writeError, stop: .contentDecoding(.unknownCoding("compress"))))?.code == .cannotDecodeContentData)
        #expect(urlError(error(CurlCode.readError, stop: .head(.tooLarge)))?.localizedDescription.contains("KiB") == true)
        // The receiver knows why it said stop; libcurl's words are all there is.
        #expect(urlError(error(CurlCode.abortedByCallback, stop: .receiverSaidStop))?.localizedDescription.contains("libcurl said 42") == true)
        // Not the stop's abort: a timeout is a timeout.
        #expect(urlError(error(28, stop: .strayInput))?.code == .timedOut)
    }

    @Test func aPinMismatchNamesThePins() {
        #expect(error(CurlCode.pinnedKeyMismatch, pins: ["a", "b"]) as? PinnedKeyMismatch == PinnedKeyMismatch(pins: ["a", "b"]))
        #expect(error(CurlCode.pinnedKeyMismatch) as? PinnedKeyMismatch == nil)
    }

    /// libcurl's own refusals of a head, said in Tern's words, only while the head is unfinished.
    @Test func libcurlsRefusalsOfAHeadAreSaidAsUntrustworthy() {
        let long = urlError(error(27, head: (200, false)))
        #expect(long?.code == .badServerResponse)
        #expect(long?.localizedDescription.contains("100 KB") == true)
        #expect(urlError(error(43, head: (200, false)))?.localizedDescription.contains("obsolete line folding") == true)
        #expect(urlError(error(1, head: (0, false)))?.localizedDescription.contains("cannot be trusted: libcurl said 1") == true)
        #expect(urlError(error(43, head: (0, false)))?.localizedDescription.contains("obsolete line folding") != true)
        #expect(urlError(error(27))?.localizedDescription.contains("100 KB") != true)
    }

    @Test func aBodyNotSentAgainSaysWhy() {
        #expect(CurlFailure.message(for: CurlCode.rewindFailed, said: "rewind", method: "POST").contains("a POST is not sent again unasked"))
        #expect(CurlFailure.message(for: 28, said: "Timeout was reached", method: "GET") == "Timeout was reached")
    }

    /// libcurl says a socket it could not make is a refused connection: the socket callback's
    /// note, not libcurl's words, tells the two apart.
    @Test func aRefusedConnectionIsToldFromNoDescriptor() {
        let said = "Failed to connect to 127.0.0.1 port 80 after 0 ms: Couldn't connect to server"
        #expect(CurlFailure.message(for: 7, said: said, method: "GET") == said)
        let lacking = CurlFailure.message(for: 7, said: said, method: "GET", lackedADescriptor: EMFILE)
        #expect(lacking.hasPrefix(said + ": no socket could be made") && lacking.contains(String(cString: strerror(EMFILE))))
        #expect(CurlFailure.message(for: 28, said: "Timeout was reached", method: "GET", lackedADescriptor: EMFILE) == "Timeout was reached")
    }

    @Test func libcurlsVersionsAreNamed() {
        #expect(CurlExchange.httpVersionName(1) == "HTTP/1.0")
        #expect(CurlExchange.httpVersionName(2) == "HTTP/1.1")
        #expect(CurlExchange.httpVersionName(3) == "HTTP/2")
        #expect(CurlExchange.httpVersionName(30) == "HTTP/3")
        #expect(CurlExchange.httpVersionName(0) == nil)
    }
}
#endif
