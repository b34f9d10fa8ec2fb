#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
@testable import TernTransport

/// The response head as libcurl hands it over, line by line, read as a value; and what an
/// exchange that stopped its transfer reports for libcurl's code.
@Suite(.onTestThreads) struct ResponseHeadReaderTests {
    /// Reads `lines` (each given its CRLF) and returns the last step's head, or its refusal.
    func read(_ lines: [String], into reader: inout ResponseHeadReader) -> Result<ResponseHeadReader.Head?, ResponseHeadReaderRefused> {
        var head: ResponseHeadReader.Head?
        for line in lines {
            let step = Array((line + "\r\n").utf8).withUnsafeBytes { reader.read($0) }
            switch step {
            case .more: continue
            case .head(let whole): head = whole
            case .refused(let refusal): return .failure(ResponseHeadReaderRefused(refusal: refusal))
            }
        }
        return .success(head)
    }

    struct ResponseHeadReaderRefused: Error, Equatable {
        let refusal: ResponseHeadReader.Refusal
    }

    @Test func interimHeadsArePassedOverAndRepeatedFieldsJoined() throws {
        var reader = ResponseHeadReader()
        let head = try read(["HTTP/1.1 100 Continue", "", "HTTP/1.1 200 OK", "Set-Thing: a", "set-thing: b",
                             "Folded: one", "\t two", ""], into: &reader).get()
        #expect(head?.status == 200)
        #expect(head?.httpVersion == "HTTP/1.1")
        #expect(head?.fields == ["Set-Thing": "a, b", "Folded": "one two"])
        #expect(reader.isComplete)
        // Trailers after the head change nothing.
        #expect(try read(["Trailer: x", ""], into: &reader).get() == nil)
    }

    /// A `Location` given again, the same, is one `Location`: joined like other repeats, the
    /// two were "/next, /next", which the redirect followed to `/next,%20/next`.
    @Test func aLocationGivenTwiceAlikeIsOne() throws {
        var reader = ResponseHeadReader()
        let head = try read(["HTTP/1.1 302 Found", "Location: /next", "X-A: 1", "location: /next", "x-a: 2", ""], into: &reader).get()
        #expect(head?.fields["Location"] == "/next")
        #expect(head?.fields["X-A"] == "1, 2")
    }

    /// Each `Set-Cookie` field stays whole beside the joined fields, a comma inside one its
    /// value's; an interim head's are not the response's.
    @Test func setCookieFieldsAreKeptOneByOne() throws {
        var reader = ResponseHeadReader()
        let head = try read(["HTTP/1.1 103 Early Hints", "Set-Cookie: early=1", "", "HTTP/1.1 200 OK",
                             "Set-Cookie: lang=en, session=x; Path=/", "set-cookie: theme=dark", ""], into: &reader).get()
        #expect(head?.setCookies == ["lang=en, session=x; Path=/", "theme=dark"])
        #expect(head?.fields["Set-Cookie"] == "lang=en, session=x; Path=/, theme=dark")
    }

    @Test func aHeadThatIsNoHTTPOrFramesItsBodyTwoWaysIsRefused() {
        var lowerCase = ResponseHeadReader()
        guard case .failure(let refused) = read(["http/1.1 200 OK"], into: &lowerCase),
              case .untrustworthy(let why) = refused.refusal else { Issue.record("accepted"); return }
        #expect(why.contains("not HTTP's"))
        var twoLengths = ResponseHeadReader()
        #expect(throws: ResponseHeadReaderRefused.self) {
            try read(["HTTP/1.1 200 OK", "Content-Length: 5", "Content-Length: 30", ""], into: &twoLengths).get()
        }
    }

    /// A carriage return that does not end a line, where a reader taking it for a line's end
    /// would see a length or the head's end: refused.
    @Test(arguments: [["HTTP/1.1 200 OK\rContent-Length: 2", ""], ["HTTP/1.1 200 OK", "X: y\rContent-Length: 2", ""],
                      ["HTTP/1.1 200 OK", "X: y\r", "Content-Length: 2", ""], ["HTTP/1.1 200 OK", "\r"]])
    func aCarriageReturnInsideALineIsRefused(lines: [String]) {
        var reader = ResponseHeadReader()
        guard case .failure(let refused) = read(lines, into: &reader), case .untrustworthy(let why) = refused.refusal else {
            Issue.record("accepted")
            return
        }
        #expect(why.contains("carriage return"))
    }

    /// Elsewhere a carriage return stays in its line, for what reads the field to judge (the
    /// cookie jar refuses such a cookie); a line ended by LF alone is read.
    @Test func aCarriageReturnThatHidesNoFramingStaysAndALineFeedEndsALine() {
        var lineFeeds = ResponseHeadReader()
        var head: ResponseHeadReader.Head?
        for line in ["HTTP/1.1 200 OK\n", "Content-Length: 2\n", "\n"] {
            if case .head(let whole) = Array(line.utf8).withUnsafeBytes({ lineFeeds.read($0) }) { head = whole }
        }
        #expect(head?.fields["Content-Length"] == "2")
        var elsewhere = ResponseHeadReader()
        let kept = try? read(["HTTP/1.1 200 O\rK", "Set-Cookie: cr=a\rb", "X: y\rContent-Type: text/plain", ""], into: &elsewhere).get()
        #expect(kept?.fields["Set-Cookie"] == "cr=a\rb")
    }

    /// A head of as many short fields as its limit allows, some repeated in another case: joined
    /// under the first one's name, in order (a look-up per field, where a search of the fields
    /// before each took the loop's thread for seconds).
    @Test func aHeadOfThousandsOfFieldsIsReadWithItsRepeatsJoined() throws {
        var reader = ResponseHeadReader()
        let names = (0..<20_000).map { "f\($0)" }
        let lines = ["HTTP/1.1 200 OK"] + names.map { "\($0): 1" } + ["F7: 2", "f19999: 3", ""]
        let head = try #require(try read(lines, into: &reader).get())
        #expect(head.fields.count == 20_000)
        #expect(head.fields["f7"] == "1, 2" && head.fields["F19999"] == "1, 3" && head.fields["f8"] == "1")
        #expect(Array(head.fields).first?.name == "f0" && Array(head.fields)[7].name == "f7")
        var distinct = ResponseHeadReader()
        #expect(try read(["HTTP/1.1 200 OK"] + names.map { "\($0): 1" } + [""], into: &distinct).get()?.fields.count == 20_000)
    }

    /// A 101 switches the connection to a protocol no request asked for: refused at its end,
    /// where other interim heads are passed over.
    @Test func aSwitchToAnotherProtocolIsRefused() throws {
        var reader = ResponseHeadReader()
        guard case .failure(let refused) = read(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", ""],
                                                into: &reader),
              case .untrustworthy(let why) = refused.refusal else { Issue.record("accepted"); return }
        #expect(why.contains("101"))
        var early = ResponseHeadReader()
        #expect(try read(["HTTP/1.1 103 Early Hints", "Link: </a.css>; rel=preload", "", "HTTP/1.1 200 OK", ""], into: &early).get()?.status == 200)
    }

    /// One length of digits is taken, however it is spaced and however often repeated; anything
    /// else, two that differ, or a length beside chunked framing, is refused.
    @Test(arguments: [
        (["12"], true), ([" 12 "], true), (["\t12"], true), (["0"], true), (["12, 12"], true), (["12", "12"], true),
        (["999999999999999999"], true), (["1000000000000000000"], true), (["9223372036854775807"], true),
        (["9223372036854775808"], false), ([""], false), (["1 2"], false), (["+12"], false), (["-1"], false),
        (["0x10"], false), (["12,13"], false), (["12", "13"], false), (["12,"], false), (["١٢"], false),
    ])
    func aLengthIsOneRunOfDigits(lengths: [String], accepted: Bool) {
        let fields = lengths.map { (name: "Content-Length", value: $0) }
        #expect((ResponseHeadCheck.problem(with: fields) == nil) == accepted, "\(lengths)")
        let chunked = fields + [(name: "Transfer-Encoding", value: "chunked")]
        #expect(ResponseHeadCheck.problem(with: chunked) != nil, "\(lengths) with chunked framing")
    }

    @Test func headsPastTheLimitAreRefusedInterimOnesCounted() {
        var reader = ResponseHeadReader()
        let field = "X: " + String(repeating: "a", count: 1000)
        let interim = ["HTTP/1.1 103 Early Hints"] + Array(repeating: field, count: 200) + [""]
        let lines = interim + ["HTTP/1.1 200 OK"] + Array(repeating: field, count: 100) + [""]
        #expect(throws: ResponseHeadReaderRefused(refusal: .tooLarge)) { try read(lines, into: &reader).get() }
    }

    /// A status line saying HTTP/2 or later is taken only from a connection that may speak
    /// HTTP/2: from one that speaks HTTP/1 it is no HTTP, and said to be such a claim (libcurl
    /// took `HTTP/200` for HTTP/2 too).
    @Test(arguments: ["HTTP/2 200", "HTTP/2.0 200 OK", "HTTP/3 200 OK", "HTTP/200 OK"])
    func aStatusLineOfHTTP2IsTakenOnlyWhereHTTP2MayBeSpoken(statusLine: String) throws {
        var http1 = ResponseHeadReader()
        #expect(throws: ResponseHeadReaderRefused(refusal: .claimsHTTP2)) { try read([statusLine, ""], into: &http1).get() }
        var http2 = ResponseHeadReader(mayBeHTTP2: true)
        let head = read([statusLine, ""], into: &http2)
        #expect(statusLine == "HTTP/200 OK" ? (try? head.get()) == nil : (try? head.get())??.status == 200, "\(head)")
        var afterInterim = ResponseHeadReader()
        #expect(throws: ResponseHeadReaderRefused(refusal: .claimsHTTP2)) { try read(["HTTP/1.1 100 Continue", "", statusLine, ""], into: &afterInterim).get() }
    }

    @Test func aStopExplainsOnlyTheAbortItCaused() {
        let url = URL(string: "http://127.0.0.1/")!
        let mismatch = BodyLengthMismatch(statedLength: 10, actualLength: 11)
        #expect(CurlExchange.Stop.body(mismatch).error(endingWith: CurlCode.abortedByCallback, url: url) as? BodyLengthMismatch == mismatch)
        // A timeout or a lost connection is what it is, whatever stopped before.
        #expect(CurlExchange.Stop.body(mismatch).error(endingWith: 28, url: url) == nil)
        #expect(CurlExchange.Stop.receiverSaidStop.error(endingWith: CurlCode.writeError, url: url) == nil)
        let stray = CurlExchange.Stop.strayInput.error(endingWith: CurlCode.abortedByCallback, url: url) as? URLError
        #expect(stray?.code == .badServerResponse)
        let shared = CurlExchange.Stop.sharedConnection.error(endingWith: CurlCode.abortedByCallback, url: url) as? URLError
        #expect(shared?.code == .badServerResponse)
        let large = CurlExchange.Stop.head(.tooLarge).error(endingWith: CurlCode.writeError, url: url) as? URLError
        #expect(large?.localizedDescription.contains("256 KiB") == true)
    }
}

#endif
