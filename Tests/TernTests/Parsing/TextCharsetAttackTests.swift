#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A body read as a `String`, "as text, in the charset its `Content-Type` names (UTF-8 when it
/// names none)", from servers that name charsets other than the four Tern spells out: UTF-16
/// with its byte order in the name (as Windows servers write it), Windows-1252 (as old PHP and
/// IIS answer), and UTF-32. Each is read in that charset, or failed typed; never read as UTF-8
/// into other text. Plain ASCII in UTF-16LE is valid UTF-8 with a NUL after each letter: read as
/// UTF-8, the app got "h\0e\0l\0l\0o\0" for "hello", silently.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct TextCharsetAttackTests {
    static let cases: [(charset: String, text: String, encoding: String.Encoding)] = [
        ("utf-16le", "hello", .utf16LittleEndian),
        ("UTF-16LE", "hello", .utf16LittleEndian),
        ("utf-16be", "hello", .utf16BigEndian),
        ("utf-32le", "hello", .utf32LittleEndian),
        ("windows-1252", "café", .windowsCP1252),
    ]

    @Test(arguments: cases.indices) func aBodyIsReadInTheCharsetItsTypeNames(index: Int) async throws {
        let (charset, text, encoding) = Self.cases[index]
        let body = try #require(text.data(using: encoding))
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=\(charset)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + [UInt8](body))
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let result = await (api.request(route: .get(server.baseURL + "/text")) as Promise<String>).result
        switch result {
        case .success(let read):
            #expect(read == text, "charset=\(charset): read \(read.debugDescription) for \(text.debugDescription)")
        case .failure(let error):
            // A charset Tern cannot read may fail, typed; these it can (Foundation knows each).
            Issue.record("charset=\(charset): \(error)")
        }
    }
}
#endif
