import Foundation
import Testing
import Tern
import TernTesting

/// A HAR as a browser's developer tools export it replays as it is: `pages`, `_` fields,
/// `cache`, full `timings`, cookies with their attributes, HTTP/2 pseudo-headers, a compressed
/// body kept decoded with its stale `content-length`, a Base64 image, a 304.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct BrowserArchiveTests {
    @Test func aBrowsersExportReplays() async throws {
        let file = scratchRecording("export.har")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.export.utf8).write(to: file.creatingDirectory())
        let configuration = APIConfiguration(retryPolicy: .never, cache: HTTPCache())
        let api = try TestAPI(baseURL: "https://shop.example/api/v2", configuration: configuration, transport: RecordingTransport(file: file, mode: .replay))

        let products: [Product] = try await api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 1])).value
        #expect(products == [Product(name: "tern", price: 3)])
        let image: Response = try await api.request(route: api.get(endpoint: "/images/tern.png")).value
        #expect(image.body == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(image.headers["Content-Type"] == "image/png")
        #expect(image.cacheOutcome == .miss)
        // Kept, but to be revalidated: the cache asks, and the recorded 304 answers.
        let again: Response = try await api.request(route: api.get(endpoint: "/images/tern.png")).value
        #expect(again.cacheOutcome == .revalidated)
        #expect(again.body == image.body)
    }

    /// Chrome's export of two requests, shortened; every field a browser writes is kept.
    static let export = #"""
    {
      "log": {
        "version": "1.2",
        "creator": {"name": "WebInspector", "version": "537.36"},
        "pages": [
          {"startedDateTime": "2026-11-28T10:00:00.000Z", "id": "page_1", "title": "https://shop.example/",
           "pageTimings": {"onContentLoad": 310.2, "onLoad": 512.9}}
        ],
        "entries": [
          {
            "_initiator": {"type": "script", "stack": {"callFrames": [{"functionName": "load", "url": "https://shop.example/app.js", "lineNumber": 12, "columnNumber": 4}]}},
            "_priority": "High",
            "_resourceType": "fetch",
            "cache": {},
            "connection": "443",
            "pageref": "page_1",
            "request": {
              "method": "GET",
              "url": "https://shop.example/api/v2/products?page=1",
              "httpVersion": "http/2.0",
              "headers": [
                {"name": ":authority", "value": "shop.example"},
                {"name": ":method", "value": "GET"},
                {"name": ":path", "value": "/api/v2/products?page=1"},
                {"name": ":scheme", "value": "https"},
                {"name": "accept", "value": "application/json"},
                {"name": "accept-encoding", "value": "gzip, deflate, br, zstd"},
                {"name": "cookie", "value": "sid=[redacted]"}
              ],
              "queryString": [{"name": "page", "value": "1"}],
              "cookies": [{"name": "sid", "value": "[redacted]", "path": "/", "domain": "shop.example", "expires": "2027-01-01T00:00:00.000Z", "httpOnly": true, "secure": true}],
              "headersSize": -1,
              "bodySize": 0
            },
            "response": {
              "status": 200,
              "statusText": "",
              "httpVersion": "http/2.0",
              "headers": [
                {"name": "content-encoding", "value": "gzip"},
                {"name": "content-length", "value": "61"},
                {"name": "content-type", "value": "application/json; charset=utf-8"},
                {"name": "date", "value": "Sat, 28 Nov 2026 10:00:00 GMT"},
                {"name": "vary", "value": "Accept-Encoding"}
              ],
              "cookies": [],
              "content": {"size": 31, "mimeType": "application/json", "compression": -30, "text": "[{\"name\":\"tern\",\"price\":3}]"},
              "redirectURL": "",
              "headersSize": -1,
              "bodySize": 61,
              "_transferSize": 161,
              "_error": null,
              "_fetchedViaServiceWorker": false
            },
            "serverIPAddress": "203.0.113.7",
            "startedDateTime": "2026-11-28T10:00:00.120Z",
            "time": 48.5,
            "timings": {"blocked": 1.2, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 45.3, "receive": 1.9, "_blocked_queueing": 0.8, "_workerStart": -1}
          },
          {
            "_initiator": {"type": "parser", "url": "https://shop.example/", "lineNumber": 40},
            "_priority": "Low",
            "_resourceType": "image",
            "cache": {"beforeRequest": null, "afterRequest": {"expires": "2026-11-29T10:00:00.000Z", "lastAccess": "2026-11-28T10:00:00.000Z", "eTag": "\"png1\"", "hitCount": 1}},
            "connection": "443",
            "pageref": "page_1",
            "request": {
              "method": "GET", "url": "https://shop.example/api/v2/images/tern.png", "httpVersion": "http/2.0",
              "headers": [{"name": "accept", "value": "image/avif,image/webp,*/*"}],
              "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0
            },
            "response": {
              "status": 200, "statusText": "", "httpVersion": "http/2.0",
              "headers": [{"name": "content-type", "value": "image/png"}, {"name": "etag", "value": "\"png1\""}, {"name": "cache-control", "value": "max-age=0, must-revalidate"}],
              "cookies": [],
              "content": {"size": 8, "mimeType": "image/png", "text": "iVBORw0KGgo=", "encoding": "base64"},
              "redirectURL": "", "headersSize": -1, "bodySize": 8, "_transferSize": 120, "_error": null
            },
            "serverIPAddress": "203.0.113.7",
            "startedDateTime": "2026-11-28T10:00:00.200Z",
            "time": 12.0,
            "timings": {"blocked": 0.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 10.9, "receive": 0.5}
          },
          {
            "_resourceType": "image",
            "cache": {},
            "request": {
              "method": "GET", "url": "https://shop.example/api/v2/images/tern.png", "httpVersion": "http/2.0",
              "headers": [{"name": "if-none-match", "value": "\"png1\""}],
              "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0
            },
            "response": {
              "status": 304, "statusText": "", "httpVersion": "http/2.0",
              "headers": [{"name": "etag", "value": "\"png1\""}],
              "cookies": [], "content": {"size": 0, "mimeType": "x-unknown"},
              "redirectURL": "", "headersSize": -1, "bodySize": 0, "_transferSize": 60
            },
            "startedDateTime": "2026-11-28T10:05:00.000Z",
            "time": 9.0,
            "timings": {"blocked": 0.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 8.0, "receive": 0.4}
          }
        ]
      }
    }
    """#
}
