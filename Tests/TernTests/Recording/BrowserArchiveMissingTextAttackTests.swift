import Foundation
import Testing
import Tern
import TernTesting

/// A browser's HAR whose entries say how large their bodies were but carry no `text`: what
/// Chrome and Firefox export for a body they did not keep (exported without content, evicted
/// from the inspector's memory, too large to keep). HAR 1.2 says of `content.text`: "Leave out
/// this field if the information is not available" — not that the body was empty.
///
/// RecordingAndReplaying.md promises: "A HAR exported by a browser replays as it is ... A value
/// replay could not use (Base64 that is none, a status no response has, a chunk of negative
/// size) is an error naming its entry when the transport is made", and a test replays "exact".
/// `HTTPArchive.bytes(nil, ...)` is an empty body: the 200 of a 48,213-byte PDF replays as an
/// empty body, downloaded and delivered as a complete file of 0 bytes, and a JSON answer of 5,120
/// bytes as an empty one; no error names the entry, at its reading or at its answer.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct BrowserArchiveMissingTextAttackTests {
    static let archive = #"""
    {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "pages": [], "entries": [
      {"startedDateTime": "2026-11-28T10:00:00.000Z", "time": 80.0, "cache": {}, "_resourceType": "document",
       "request": {"method": "GET", "url": "https://shop.example/invoices/7.pdf", "httpVersion": "http/2.0", "headers": [],
                   "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
       "response": {"status": 200, "statusText": "", "httpVersion": "http/2.0",
                    "headers": [{"name": "content-type", "value": "application/pdf"}, {"name": "content-length", "value": "48213"}],
                    "cookies": [], "content": {"size": 48213, "mimeType": "application/pdf"},
                    "redirectURL": "", "headersSize": -1, "bodySize": 48213, "_transferSize": 48413},
       "timings": {"blocked": 0.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 60.0, "receive": 19.4}},
      {"startedDateTime": "2026-11-28T10:00:01.000Z", "time": 30.0, "cache": {}, "_resourceType": "fetch",
       "request": {"method": "GET", "url": "https://shop.example/api/orders", "httpVersion": "http/2.0", "headers": [],
                   "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
       "response": {"status": 200, "statusText": "", "httpVersion": "http/2.0",
                    "headers": [{"name": "content-type", "value": "application/json"}],
                    "cookies": [], "content": {"size": 5120, "mimeType": "application/json"},
                    "redirectURL": "", "headersSize": -1, "bodySize": 1200, "_transferSize": 1400},
       "timings": {"blocked": 0.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 20.0, "receive": 9.4}}
    ]}}
    """#

    @Test func aBodyTheArchiveDoesNotHoldIsNotReplayedEmpty() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(Self.archive.utf8).write(to: file.creatingDirectory())
        let transport: RecordingTransport
        do {
            transport = try RecordingTransport(file: file, mode: .replay)
        } catch {
            return   // refused when made, naming the entry: as promised
        }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let destination = file.deletingLastPathComponent().appendingPathComponent("7.pdf")
        switch await api.download(route: .get("https://shop.example/invoices/7.pdf"), to: destination).result {
        case .success(let downloaded):
            let size = (try? Data(contentsOf: downloaded.fileURL))?.count ?? -1
            Issue.record("a download of 48213 bytes was delivered as a file of \(size) bytes")
        case .failure:
            break
        }
        switch await (api.request(route: .get("https://shop.example/api/orders")) as Promise<Data>).result {
        case .success(let body): Issue.record("an answer of 5120 bytes was replayed as one of \(body.count)")
        case .failure: break
        }
    }
}
