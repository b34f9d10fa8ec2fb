import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite struct HTTPHeadersTests {
    @Test func namesAreCaseInsensitiveAndTheLastSpellingWins() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-A": "1"]
        headers["content-type"] = "application/json"
        #expect(headers["CONTENT-TYPE"] == "application/json")
        #expect(headers.count == 2)
        #expect(headers.map(\.name) == ["content-type", "X-A"])
        headers["x-a"] = nil
        #expect(!headers.contains("X-A"))
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
