import Testing
@testable import TernCore

/// A media type's parameters, read with quoted values as RFC 9110 section 5.6.6 writes them.
@Suite(.onTestThreads) struct MediaTypeFieldTests {
    @Test(arguments: [
        ("text/plain; charset=utf-8", "utf-8"),
        ("text/plain;charset=UTF-8", "UTF-8"),
        ("text/plain; CHARSET = \"utf-8\" ", "utf-8"),
        (#"text/plain; title="a;charset=utf-16"; charset=utf-8"#, "utf-8"),
        (#"text/plain; note="x\"; charset=utf-32"; charset=latin1"#, "latin1"),
        (#"text/plain; charset="utf\-8""#, "utf-8"),
        ("text/plain; format=flowed; charset=iso-8859-1; charset=utf-8", "iso-8859-1"),
        ("text/plain;; ;charset=utf-16le", "utf-16le"),
        (#"text/plain; charset="utf-8"junk; x=1"#, "utf-8"),
    ])
    func findsTheParameterOutsideQuotes(mediaType: String, charset: String) {
        #expect(MediaTypeField.parameter("charset", in: mediaType) == charset)
    }

    @Test(arguments: ["text/plain", "text/plain; xcharset=utf-16", #"text/plain; title="charset=utf-16""#,
                      #"text/plain; title="; charset=utf-16"#, "charset=utf-16", "text/plain; charset"])
    func findsNoneWhereThereIsNone(mediaType: String) {
        #expect(MediaTypeField.parameter("charset", in: mediaType) == nil)
    }

    @Test(arguments: [
        ("text/event-stream", "text/event-stream"),
        ("Text/Event-Stream; charset=utf-8", "text/event-stream"),
        (#"text/event-stream; profile="a,b""#, "text/event-stream"),
        (#"text/event-stream; profile="a\",b"; x=1"#, "text/event-stream"),
        ("application/json, text/event-stream", "text/event-stream"),
        ("text/event-stream, application/json", "application/json"),
        (#"application/json; note="x, text/event-stream""#, "application/json"),
        ("", ""),
    ])
    func theLastValuesTypeIsTheFields(field: String, type: String) {
        #expect(MediaTypeField.lastType(in: field) == type)
    }
}
