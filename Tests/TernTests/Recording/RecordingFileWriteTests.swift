import Foundation
import Testing
import Tern
@testable import TernTesting

/// A recording's file written from each entry's bytes, encoded once: byte for byte the file
/// the whole archive's encoding made (users diff these files in review), over entries with
/// awkward content; and recording the n-th exchange encodes one entry, not n (300 exchanges of
/// 16 KB bodies took 12.6 s when each re-encoded the whole archive).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingFileWriteTests {
    typealias Entry = HTTPArchive.Entry

    /// Entries whose encoding has every layout the encoder has: lines and quotes in bodies,
    /// unicode, empty arrays and objects, Base64, nested arrays, fields left out.
    static func awkwardEntries() -> [Entry] {
        let binary = Data((0..<256).map { UInt8($0) } + [0x0A, 0x0A, 0x22, 0x5C]).base64EncodedString()
        let text = "line one\nline \"two\"\r\n\ttabbed \\ back/slash \u{0} \u{1F} é 日本語 🐦‍⬛ \u{2028}\u{2029} e\u{301}\n\n"
        return [
            Entry(startedDateTime: "2026-11-29T09:00:00.000Z", time: 1.5,
                  request: .init(method: "POST", url: "https://shop.example/b?q=\"x\"&é=1", httpVersion: "HTTP/1.1",
                                 headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "X-Quote", value: "\"\n\"")],
                                 queryString: [.init(name: "q", value: "\"x\""), .init(name: "é", value: "1")], cookies: [],
                                 headersSize: -1, bodySize: 12, postData: .init(mimeType: "application/json", text: #"{"a": "\n"}"#)),
                  response: .init(status: 200, statusText: "OK", httpVersion: "HTTP/1.1", headers: [], cookies: [],
                                  content: .init(size: text.utf8.count, mimeType: "text/plain; charset=utf-8", text: text),
                                  redirectURL: "", headersSize: -1, bodySize: -1),
                  timings: .init(blocked: -1, dns: 0.25, connect: 1e-3, send: 0, wait: 12.125, receive: 1e20, ssl: -1)),
            Entry(request: .init(method: "GET", url: "https://shop.example/a", headers: [], queryString: [], cookies: []),
                  response: .init(status: 200, headers: [], cookies: [], content: .init(size: 260, mimeType: "image/png", text: binary, encoding: "base64")),
                  timings: .init(), chunks: [], open: true),
            Entry(request: .init(method: "PUT", url: "https://shop.example/a",
                                 postData: .init(mimeType: "multipart/form-data", params: [], sha256: String(repeating: "ab", count: 32), size: 70_000)),
                  response: .init(status: 0), chunks: [.init(after: 0.1, size: 10), .init(after: 0, size: 0)], error: -1001),
            Entry(request: .init(method: "GET", url: ""), response: .init(status: 304, content: .init(text: ""))),
        ]
    }

    @Test func theLayoutOfTheFileIsFound() {
        #expect(HTTPArchive.layout != nil, "every write encodes the whole archive")
    }

    /// Every non-empty sequence of the awkward entries (each, each pair in both orders, all):
    /// assembled from their bytes, the file is the archive's encoding.
    @Test func anAssembledFileIsTheArchivesEncodingByteForByte() throws {
        let entries = Self.awkwardEntries()
        var sequences = entries.map { [$0] }
        for first in entries.indices { for second in entries.indices where second != first { sequences.append([entries[first], entries[second]]) } }
        sequences.append(entries)
        sequences.append(entries + entries.reversed())
        for sequence in sequences {
            var pieces: [Data] = []
            for entry in sequence { pieces.append(try #require(try HTTPArchive.encodedEntry(entry))) }
            let assembled = try #require(HTTPArchive.assembled(pieces))
            let whole = try HTTPArchive(log: HTTPArchive.Log(entries: sequence)).encoded()
            #expect(assembled == whole, "\(String(decoding: assembled, as: UTF8.self))\n---\n\(String(decoding: whole, as: UTF8.self))")
        }
    }

    /// Entries added one by one, in an order the file sorts otherwise, some failures pending:
    /// each exchange encodes its own entry (and the failures it writes), none before it; the
    /// file is, after each, the encoding of the archive it holds; a secret hidden late encodes
    /// again the entries it was in, and only those.
    @Test func recordingAnExchangeEncodesItsEntryNotTheFile() throws {
        let url = scratchRecording()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let file = try RecordingFile.opening(url, fresh: true)
        let awkward = Self.awkwardEntries()
        func check(_ step: String) throws {
            let written = try Data(contentsOf: url)
            #expect(try HTTPArchive.read(from: url).encoded() == written, "\(step): the file is not its archive's encoding")
        }
        var encodings = file.encodings
        #expect(encodings == 0)
        for index in 0..<40 {
            var entry = awkward[index % awkward.count]
            entry.request.url = "https://shop.example/\((index * 7) % 40)/" + entry.request.url
            try file.add(entry, hiding: [])
            let pending = entry.response.status == 0
            #expect(file.encodings - encodings == (pending ? 0 : index % awkward.count == 3 ? 2 : 1), "exchange \(index)")
            encodings = file.encodings
            if !pending { try check("exchange \(index)") }
        }
        let secret = "s3cret-token-value"
        var carrier = awkward[1]
        carrier.response.headers = [.init(name: "Link", value: secret)]
        try file.add(carrier, hiding: [])
        try file.add(carrier, hiding: [])
        encodings = file.encodings
        try file.add(awkward[0], hiding: [secret])
        #expect(file.encodings - encodings == 3, "the two entries the secret was in, and the new one")
        #expect(try !String(contentsOf: url, encoding: .utf8).contains(secret))
        try check("after the secret")
        #expect(try recordedEntries(in: url).count == 43)
    }

    /// Through the transport, bodies of every kind: the file written is its archive's encoding.
    @Test func aRecordedFileIsItsArchivesEncoding() async throws {
        let url = scratchRecording()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/text", answers: .status(200, headers: ["Content-Type": "text/plain; charset=utf-8"],
                                                       body: Data("a \"quoted\"\nline, é, 🐦‍⬛, \u{2028}".utf8))))
        stubs.add(Stub(.get, "/binary", answers: .status(200, headers: ["Content-Type": "application/octet-stream"], body: Data((0..<256).map { UInt8($0) }))))
        stubs.add(Stub(.get, "/empty", answers: .status(204)))
        let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                              transport: RecordingTransport(file: url, mode: .record, upstream: stubs))
        for path in ["/text", "/binary", "/empty", "/text"] {
            let _: Data = try await api.request(route: api.get(endpoint: path)).value
            #expect(try HTTPArchive.read(from: url).encoded() == Data(contentsOf: url), "after \(path)")
        }
        #expect(try recordedEntries(in: url).count == 4)
    }
}
