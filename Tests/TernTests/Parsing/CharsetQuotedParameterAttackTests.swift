import Foundation
import Testing
import Tern
import TernTesting

/// A text answer whose `Content-Type` has, before its `charset`, a parameter whose quoted value
/// holds a semicolon and the words `charset=…`: `text/plain; title="a;charset=utf-16";
/// charset=utf-8`. Lawful (RFC 9110 §5.6.6: a parameter's value may be a quoted-string, in which
/// `;` and `=` are text), and the charset is UTF-8.
///
/// ResponsesAndErrors / TextCharsetAttackTests: a body read as a `String` is read "as text, in
/// the charset its `Content-Type` names"; the README's "never a silently wrong answer". Here the
/// body, UTF-8 `hello, tern`, is read as UTF-16 and handed over as other characters, no error:
/// `String.Encoding(charsetOf:)` (Sources/TernCore/HTTP/Charset.swift) splits the field on every
/// `;`, quotes or not, and takes the first piece named `charset` (`charset=utf-16"`, its quote
/// trimmed). The same reading decides a recording's text bodies. Both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CharsetQuotedParameterAttackTests {
    @Test(arguments: [#"text/plain; title="a;charset=utf-16"; charset=utf-8"#, #"text/plain;note="x; charset=utf-32";charset=UTF-8"#])
    func aCharsetInsideAQuotedValueIsNotTheBodys(contentType: String) async throws {
        let body = Array("hello, tern".utf8)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array("HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let result = await (api.request(route: .get(server.baseURL + "/text")) as Promise<String>).result
        switch result {
        case .success(let read):
            #expect(read == "hello, tern", "read \(read.debugDescription)")
        case .failure(let error):
            Issue.record("a UTF-8 body failed: \(error)")
        }
    }
}
