import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads) struct HTTPHeadersTests {
    @Test func namesAreCaseInsensitiveAndTheLastSpellingWins() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-A": "1"]
        headers["content-type"] = "application/json"
        #expect(headers["CONTENT-TYPE"] == "application/json")
        #expect(headers.count == 2)
        #expect(headers.map(\.name) == ["content-type", "X-A"])
        headers["x-a"] = nil
        #expect(!headers.contains("X-A"))
    }

    /// Made from a list, as from a dictionary literal: a later field replaces an earlier one of
    /// the same name in its place, with its spelling; names that differ by more than ASCII case
    /// stay apart. Tens of thousands of names, as a hostile head has, take one pass.
    @Test func fieldsFromAListReplaceInPlaceWhateverTheirNumber() {
        let headers = HTTPHeaders([("Accept", "a"), ("X-1", "b"), ("ACCEPT", "c"), ("x-\u{212A}", "kelvin"), ("x-k", "k")])
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["ACCEPT=c", "X-1=b", "x-\u{212A}=kelvin", "x-k=k"])
        let many = (0..<30_000).map { ("X-Field-\($0)", "\($0)") } + [("x-field-7", "last")]
        let big = HTTPHeaders(many)
        #expect(big.count == 30_000)
        #expect(big["X-FIELD-7"] == "last" && big["x-field-29999"] == "29999")
        #expect(Array(big)[7].name == "x-field-7")
    }

    @Test func mergingKeepsOrderAndLetsTheLaterWin() {
        let common: HTTPHeaders = ["Accept": "application/json", "X-Client": "tern"]
        let merged = common.merging(["x-client": "app", "X-Trace": "1"])
        #expect(merged.map { "\($0.name)=\($0.value)" } == ["Accept=application/json", "x-client=app", "X-Trace=1"])
    }

    @Test(arguments: [
        ("X-Ok", "fine value", false),
        ("X-Bad", "a\r\nX-Injected: 1", true),
        ("X-Bad", "a\nb", true),
        ("X-Bad", "a\0b", true),
        ("X-Bad\r\nInjected", "v", true),
        ("Bad Name", "v", true),
        ("", "v", true),
        ("X-Unicode", "café", false),
        ("X-Tab", "a\tb", false),
        ("X-VT", "a\u{0B}b", true),
        ("X-FF", "a\u{0C}b", true),
        ("X-DEL", "a\u{7F}b", true),
        ("X-ESC", "\u{1B}[31m", true),
        ("Café", "v", true),
        ("X:Colon", "v", true),
        ("X(Paren)", "v", true),
        ("X-Tab\t", "v", true),
        ("!#$%&'*+-.^_`|~09azAZ", "v", false),
    ])
    func forbidsWhatCouldInjectHeaders(name: String, value: String, invalid: Bool) {
        let headers = HTTPHeaders([(name, value)])
        #expect((headers.firstInvalidField != nil) == invalid)
    }

    @Test func dictionaryInitIsSortedForStability() {
        let headers = HTTPHeaders(["b": "2", "a": "1", "c": "3"])
        #expect(headers.map(\.name) == ["a", "b", "c"])
        #expect(headers.dictionary == ["a": "1", "b": "2", "c": "3"])
    }

    @Test func framingFieldsAreFoundWhateverTheirCase() {
        #expect(HTTPHeaders(["content-LENGTH": "1"]).firstFramingField?.name == "content-LENGTH")
        #expect(HTTPHeaders([("Accept", "*/*"), ("te", "trailers")]).firstFramingField?.name == "te")
        #expect(HTTPHeaders(["Content-Type": "a/b", "Hosts": "x", "X-Host": "y"]).firstFramingField == nil)
    }
}
