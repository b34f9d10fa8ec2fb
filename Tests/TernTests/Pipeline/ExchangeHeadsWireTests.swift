import Foundation
import Testing
@testable import Tern
import TernTesting

/// Heads a well-behaved server sends that test an exchange's one-head rule: an informational head
/// before the final one, a body that ends with the connection, a download's redirect. Each is
/// read into memory, a file and a stream.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ExchangeHeadsWireTests: EarlyAnswerAttack {
    static let text = ExchangeEventsWireTests.text

    /// `103 Early Hints` or an unasked `100 Continue` before the final head (RFC 9110 §15.2: a
    /// client must accept 1xx responses it did not expect): the final head and its body are the
    /// answer, not a second head that fails the exchange. Over libcurl here; FoundationNetworking's
    /// URLSession fails it (see SeamBreakTests on the breaks branch).
    @Test(.enabled(if: TestTransport.isCurl), arguments: ["103 Early Hints\r\nLink: </style.css>; rel=preload", "100 Continue", "102 Processing"], Reading.allCases)
    func anInformationalHeadBeforeTheFinalOne(informational: String, reading: Reading) async throws {
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.1 \(informational)\r\n\r\n")
            connection.pause(10)
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.text.utf8.count)\r\n\r\n\(Self.text)")
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/hinted"))
    }

    /// An HTTP/1.0 answer with neither length nor chunks: its body ends with the connection.
    @Test(arguments: Reading.allCases)
    func aBodyThatEndsWithTheConnection(reading: Reading) async throws {
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            for line in Self.text.split(separator: "\n") {
                connection.send(line + "\n")
                connection.pause(5)
            }
            shutdown(connection.socket, Int32(SHUT_RDWR))
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(reading, server.baseURL + "/closing"))
    }

    /// A download redirected to another origin: the file holds the final body alone.
    @Test func aRedirectedDownloadHoldsTheFinalBody() async throws {
        let final = try ExchangeEventsWireTests.server { connection, _ in
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.text.utf8.count)\r\n\r\n\(Self.text)")
        }
        defer { final.stop() }
        let server = try ExchangeEventsWireTests.server { connection, _ in
            connection.send(RawServer.Connection.response("moved away", status: "307 Temporary Redirect", headers: "Location: \(final.baseURL)/file\r\n"))
        }
        defer { server.stop() }
        ExchangeEventsWireTests.expectText(try await ExchangeEventsWireTests.reading(.download, server.baseURL + "/file"))
    }
}
