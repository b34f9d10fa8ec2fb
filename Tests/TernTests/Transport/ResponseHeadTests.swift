import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// What the pipeline reads of a response is Tern's own head; Foundation's `HTTPURLResponse` is
/// made only when asked for, and must then say what the head says.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResponseHeadTests {
    static let head = "HTTP/1.1 201 Created\r\nContent-Type: text/plain; charset=utf-8\r\nX-Trace: one\r\n"
        + "ETag: \"v1\"\r\nX-Trace: two\r\nContent-Length: 5\r\n\r\nhello"

    @Test func aResponsesHeadAndFoundationsResponseAgree() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { _ = connection.send(Self.head) }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let response: Response = try await api.request(route: .get(server.baseURL + "/made")).value
        #expect(response.statusCode == 201)
        #expect(response.body == Data("hello".utf8))
        #expect(response.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(response.headers["X-TRACE"] == "one, two")   // repeated fields joined, as URLSession joins them
        #expect(response.head.contentLength == 5)
        if TestTransport.isCurl {
            #expect(response.head.httpVersion == "HTTP/1.1")
            #expect(response.headers.map(\.name) == ["Content-Type", "X-Trace", "ETag", "Content-Length"])   // as they came
        }
        let foundation = response.httpResponse
        #expect(foundation === response.httpResponse)   // made once
        #expect(foundation.statusCode == 201)
        #expect(foundation.url?.path == "/made")
        #expect(foundation.value(forHTTPHeaderField: "etag") == "\"v1\"")
        #expect(foundation.value(forHTTPHeaderField: "X-Trace") == "one, two")
        #expect(foundation.mimeType == "text/plain")
        #expect(foundation.textEncodingName == "utf-8")
        #expect(foundation.expectedContentLength == 5)
    }

    @Test func aHeadFromFoundationsResponseKeepsIt() throws {
        let url = try #require(URL(string: "https://shop.example/items"))
        let foundation = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                                      headerFields: ["Content-Length": "12", "B": "2", "A": "1"]))
        let head = ResponseHead(foundation)
        #expect(head.urlResponse === foundation)
        #expect(head.statusCode == 200)
        #expect(head.url == url)
        #expect(head.contentLength == 12)
        #expect(head.headers["a"] == "1")
        #expect(head.headers.map(\.name) == ["A", "B", "Content-Length"])   // a dictionary's fields, in name order
    }

    /// Made from its parts, with fields or none, Foundation's response is the head's own (its
    /// URL, status and fields; nothing holding its place), made once.
    @Test func foundationsResponseOfAHeadMadeFromPartsSaysWhatTheHeadSays() throws {
        let url = try #require(URL(string: "http://shop.example/orders/7"))
        for fields in [[:], ["ETag": "\"v2\""]] as [HTTPHeaders] {
            let head = try #require(ResponseHead(url: url, statusCode: 404, httpVersion: "HTTP/1.1", headers: fields))
            let foundation = head.urlResponse
            #expect(foundation === head.urlResponse)
            #expect(foundation.url == url && foundation.statusCode == 404)
            #expect(foundation.value(forHTTPHeaderField: "etag") == fields["ETag"])
        }
    }

    @Test func aLengthThatIsNoNumberIsNone() throws {
        let url = try #require(URL(string: "https://shop.example/items"))
        for (field, length) in [("12", Int64(12)), ("0", 0), ("-1", nil), ("12 ", nil), ("", nil), ("x", nil)] as [(String, Int64?)] {
            let head = try #require(ResponseHead(url: url, statusCode: 200, httpVersion: nil, headers: ["Content-Length": field]))
            #expect(head.contentLength == length, "\(field)")
        }
        let none = try #require(ResponseHead(url: url, statusCode: 204, httpVersion: nil, headers: [:]))
        #expect(none.contentLength == nil)
        #expect(none.urlResponse.statusCode == 204)
    }
}
