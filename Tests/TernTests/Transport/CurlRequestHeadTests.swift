#if os(Linux)
import Testing
@testable import TernTransport

/// The request's method and header fields as libcurl is told them.
@Suite(.onTestThreads) struct CurlRequestHeadTests {
    struct Field: Equatable {
        let name: String
        let separator: String
        let value: String
    }

    static func fields(_ given: [String: String], sendsBody: Bool) -> (fields: [String: Field], requested: String?) {
        var fields: [String: Field] = [:]
        let requested = CurlRequestHead.forEachField(of: given, sendsBody: sendsBody) { name, separator, value in
            fields[name] = Field(name: name, separator: separator.description, value: value)
        }
        return (fields, requested)
    }

    @Test func theMethodIsImpliedNoBodyOrCustom() {
        #expect(CurlRequestHead.method("GET", sendsBody: false) == .implied)
        #expect(CurlRequestHead.method("POST", sendsBody: true) == .implied)
        #expect(CurlRequestHead.method("HEAD", sendsBody: false) == .noBody)
        #expect(CurlRequestHead.method("POST", sendsBody: false) == .custom("POST"))
        #expect(CurlRequestHead.method("GET", sendsBody: true) == .custom("GET"))
        #expect(CurlRequestHead.method("PUT", sendsBody: true) == .custom("PUT"))
        #expect(CurlRequestHead.method("DELETE", sendsBody: false) == .custom("DELETE"))
    }

    @Test func ternAsksForWhatItDecodesUnlessTheRequestNamesItsOwn() {
        let plain = Self.fields(["Accept": "application/json"], sendsBody: false)
        #expect(plain.requested == nil)
        #expect(plain.fields["Accept-Encoding"] == Field(name: "Accept-Encoding", separator: ": ", value: ContentDecoder.accepted))
        #expect(plain.fields["Accept"] == Field(name: "Accept", separator: ": ", value: "application/json"))
        #expect(plain.fields.count == 2)

        let own = Self.fields(["accept-encoding": "br"], sendsBody: false)
        #expect(own.requested == "br")
        #expect(own.fields.count == 1)
        #expect(own.fields["accept-encoding"]?.value == "br")

        let range = Self.fields(["Range": "bytes=0-9"], sendsBody: false)
        #expect(range.requested == nil)
        #expect(range.fields["Accept-Encoding"]?.value == "identity")
    }

    /// "Name:" removes libcurl's own field; "Name;" sends one with an empty value.
    @Test func libcurlsOwnFieldsForABodyAreTakenAwayAndEmptyOnesSent() {
        let posted = Self.fields(["X-Empty": "", "User-Agent": "", "X-Blank": " \t ", "Accept": " "], sendsBody: true)
        #expect(posted.fields["Content-Type"] == Field(name: "Content-Type", separator: ":", value: ""))
        #expect(posted.fields["Expect"] == Field(name: "Expect", separator: ":", value: ""))
        #expect(posted.fields["User-Agent"] == Field(name: "User-Agent", separator: ":", value: ""))
        #expect(posted.fields["X-Empty"] == Field(name: "X-Empty", separator: ";", value: ""))
        // A blank value is an empty one: "X-Blank:  " would be dropped by libcurl.
        #expect(posted.fields["X-Blank"] == Field(name: "X-Blank", separator: ";", value: ""))
        #expect(posted.fields["Accept"] == Field(name: "Accept", separator: ":", value: ""))

        let typed = Self.fields(["content-type": "application/json"], sendsBody: true)
        #expect(typed.fields["Content-Type"] == nil)
        #expect(typed.fields["content-type"]?.value == "application/json")

        let got = Self.fields([:], sendsBody: false)
        #expect(got.fields["Content-Type"] == nil)
        #expect(got.fields["Expect"] == nil)
    }
}
#endif
