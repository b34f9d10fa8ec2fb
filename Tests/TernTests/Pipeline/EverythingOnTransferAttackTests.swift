#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Streams, downloads and uploads through an API with every feature on (``EverythingOn``): a
/// stream the server marks cacheable is never answered from the cache nor kept there, is
/// recorded within the recording's bound, and replays; a stream cancelled mid-way settles once;
/// a download replays to the same bytes; an upload whose file shrinks while it is sent fails
/// typed, keeps nothing in the cache, and leaves a recording `.replay` reads.
@Suite(.onTestThreads, .enabled(if: TestTransport.isCurl), .timeLimit(.minutes(1)))
struct EverythingOnTransferAttackTests {
    typealias Site = EverythingOn

    /// `count` events of about a KiB each, numbered, with a line the recording must escape.
    static func events(_ count: Int) -> Data {
        var text = ""
        let filler = String(repeating: "e", count: 1000)
        for index in 0..<count { text += "id: \(index)\ndata: {\"n\": \(index), \"q\": \"\\\"\(filler)\"}\n\n" }
        return Data(text.utf8)
    }

    /// The bytes of files in the cache's directory that hold `marker`.
    static func cachedFiles(holding marker: String, in site: Site) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: site.cacheDirectory.path)) ?? []
        return names.filter { name in
            let data = (try? Data(contentsOf: site.cacheDirectory.appendingPathComponent(name))) ?? Data()
            return data.range(of: Data(marker.utf8)) != nil
        }
    }

    /// An event stream the server says may be cached for ten minutes: each stream reaches the
    /// server, nothing of it is kept in the cache, it is recorded, and replays event for event.
    @Test func aCacheableEventStreamIsNeverCachedAndReplaysWhole() async throws {
        // Under the 4 MiB a stream's buffer holds: see aLongRecordedStreamReplaysToASlowReader.
        let count = 2048
        let body = Self.events(count)
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: public, max-age=600\r\n"
                            + "ETag: \"s1\"\r\nContent-Length: \(body.count)\r\n\r\n")
            connection.send(Array(body))
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        for round in 0..<2 {
            var numbers = [Int]()
            let stream = api.stream(route: .get("/events"))
            settled.watch(stream.response)
            for try await event in stream.events { numbers.append(Int(event.lastEventID) ?? -1) }
            #expect(numbers == Array(0..<count), "round \(round): \(numbers.count) events")
            let response = try await stream.response.value
            #expect(response.cacheOutcome != .hit)
        }
        #expect(site.received.items.filter { $0.hasPrefix("GET /events") && $0.contains("Bearer access-") }.count == 2)
        #expect(Self.cachedFiles(holding: "\"n\": 17,", in: site) == [])
        #expect(await eventually(timeout: 5) { settled.count == 2 })
        #expect(site.leakedSecrets() == [])
        // Replayed through the same API's settings, offline, with a cold cache of its own.
        let replay = try site.api(mode: .replay) { $0.cache = try? HTTPCache(directory: site.folder.appendingPathComponent("cache/replay")) }
        var replayed = [Int]()
        for try await event in replay.stream(route: .get("/events")).events { replayed.append(Int(event.lastEventID) ?? -1) }
        #expect(replayed == Array(0..<count))
    }

    /// A recorded event stream longer than a stream's buffer (4 MiB by default), replayed to a
    /// reader that starts a moment after the request and takes a moment over its first event,
    /// as an app's UI does: read whole, as it was while recorded over libcurl. (Replay handed
    /// the body over at once, as one chunk, and took `TransferDecision.pause` as `proceed`: the
    /// stream ended with `responseTooLarge`.)
    @Test func aLongRecordedStreamReplaysToASlowReader() async throws {
        let count = 6 * 1024
        let body = Self.events(count)
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.count)\r\n\r\n")
            connection.send(Array(body))
            return true
        }
        let api = try site.api()
        // Recorded, read as slowly as it will be replayed: whole.
        #expect(try await Self.read(api.stream(route: .get("/long-events"))) == count)
        let replay = try site.api(mode: .replay) { $0.cache = try? HTTPCache(directory: site.folder.appendingPathComponent("cache/replay")) }
        #expect(try await Self.read(replay.stream(route: .get("/long-events"))) == count)
    }

    /// How many events `stream` brings to a reader that starts half a second after the
    /// request, and waits as long again after its first event.
    static func read(_ stream: ResponseStream) async throws -> Int {
        try await Task.sleep(for: .milliseconds(500))
        var count = 0
        for try await _ in stream.events {
            count += 1
            if count == 1 { try await Task.sleep(for: .milliseconds(500)) }
        }
        return count
    }

    /// An event stream longer than the 64 MiB a recording keeps: every event reaches the reader,
    /// with the stream's memory held by the recorder alone (it lets go past its bound); then
    /// the stream ends with a typed error saying it could not be recorded, and the file holds
    /// none of it. Its memory is measured in a child process of its own, where other tests'
    /// cannot blur it (`RecordingStreamMemoryAttackTests`).
    @Test func aStreamLongerThanARecordingKeepsIsReadWholeAndNotRecorded() async throws {
        let block = Self.events(1024)
        let blocks = 66 * (1 << 20) / block.count + 1
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            let framed = Self.openChunkedEvents(on: connection, chunk: Array(block))
            for _ in 0..<blocks { guard connection.send(framed) else { return false } }
            connection.send("0\r\n\r\n")
            return true
        }
        let api = try site.api()
        let settled = Settlements()
        let stream = api.stream(route: .get("/endless"))
        settled.watch(stream.response)
        var count = 0
        do {
            for try await _ in stream.events { count += 1 }
            Issue.record("a stream longer than a recording keeps ended well")
        } catch {
            #expect(error is APIError, "\(error)")
            #expect("\(error)".contains("recording"), "\(error)")
        }
        #expect(count == blocks * 1024)
        #expect(await eventually(timeout: 5) { settled.count == 1 })
        // The 401 before the refresh is recorded; the stream is not.
        #expect(try Self.statuses(of: "/endless", in: site.recordingFile) == [401])
        #expect(site.leakedSecrets() == [])
    }

    /// Sends the head of an event stream framed in chunks; returns `chunk` framed as one.
    static func openChunkedEvents(on connection: RawServer.Connection, chunk: [UInt8]) -> [UInt8] {
        connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        return Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
    }

    /// The statuses of the exchanges a recording keeps for URLs ending in `path`, in order.
    static func statuses(of path: String, in file: URL) throws -> [Int] {
        let archive = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
        let entries = (archive?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        return entries.compactMap { entry in
            guard let url = (entry["request"] as? [String: Any])?["url"] as? String, url.hasSuffix(path) else { return nil }
            return (entry["response"] as? [String: Any])?["status"] as? Int
        }
    }

    /// A stream that never ends, cancelled once a hundred events came: its response promise
    /// settles once, typed; the server sees the connection go; the recording, written as the
    /// transfer stops, is one `.replay` reads.
    @Test func aStreamCancelledMidWaySettlesOnceAndLeavesACoherentRecording() async throws {
        let chunk = Array(Self.events(64))
        let hungUp = Recorder<Bool>()
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            let framed = Self.openChunkedEvents(on: connection, chunk: chunk)
            var sent = 0
            while sent < 20_000, connection.send(framed) { sent += 1 }
            hungUp.append(true)
            return false
        }
        let api = try site.api()
        let settled = Settlements()
        let stream = api.stream(route: .get("/forever"))
        settled.watch(stream.response)
        var seen = 0
        do {
            for try await _ in stream.events {
                seen += 1
                if seen == 100 { stream.cancel() }
                if seen > 100_000 { break }
            }
        } catch {
            // Cancelled: the events end with the typed error, or with the events already read.
            #expect(error is APIError, "\(error)")
        }
        #expect(seen >= 100)
        let result = await stream.response.result
        if case .failure(let error) = result { #expect(error is APIError, "\(error)") }
        #expect(await eventually(timeout: 10) { !hungUp.items.isEmpty })
        #expect(await eventually(timeout: 5) { settled.count == 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(settled.count == 1)
        #expect(site.leakedSecrets() == [])
        _ = try RecordingTransport(file: site.recordingFile, mode: .replay)
    }

    /// A download to a file, then a multipart upload from a file cut short while it is sent:
    /// the download is whole, the upload fails typed (not retried, no hang), nothing of either
    /// is in the cache, and the recording replays the download to the same bytes.
    @Test func anUploadWhoseFileShrinksFailsTypedAndTheRecordingStillReplays() async throws {
        let download = Data((0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        let (headArrived, cut) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let uploadBytes = Recorder<(announced: Int, came: Int)>()
        let site = try Site { request, connection in
            guard !Site.refused(request, on: connection) else { return true }
            if request.path == "/file" {
                connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nCache-Control: private, max-age=600\r\n"
                                + "Content-Length: \(download.count)\r\n\r\n")
                connection.send(Array(download))
                return true
            }
            // POST /upload: its body unread yet.
            headArrived.signal()
            _ = cut.wait(timeout: .now() + 40)
            let announced = Site.contentLength(of: request.text)
            let came = connection.discard(announced, within: 10)
            uploadBytes.append((announced, came))
            guard came == announced else { return false }
            connection.send(Site.response("taken"))
            return true
        }
        // Minutes, not seconds, to time out: a sanitized run on a loaded machine took 20 s from
        // the upload's start to its end, and its timeout read as the hang this test looks for.
        let api = try site.api { $0.timeout = 90; $0.idleTimeout = 60 }
        let settled = Settlements()
        let destination = site.files.appendingPathComponent("download.bin")
        let file = try await settled.watch(api.download(route: .get("/file"), to: destination)).value
        #expect(try Data(contentsOf: file.fileURL) == download)

        // 8 MiB, sparse; cut to 1 KiB once the upload's head has come.
        let upload = site.files.appendingPathComponent("upload.bin")
        #expect(FileManager.default.createFile(atPath: upload.path, contents: nil))
        let sized = try FileHandle(forWritingTo: upload)
        try sized.truncate(atOffset: 8 << 20)
        try sized.close()
        let sent: Promise<Response> = api.request(route: .post("/upload"), parameters: MultipartParameters(parts: [
            Part(name: "note", value: "hello"), Part(name: "file", fileURL: upload, filename: "upload.bin"),
        ]))
        settled.watch(sent)
        #expect(headArrived.wait(timeout: .now() + 40) == .success)
        #expect(truncate(upload.path, 1024) == 0)
        cut.signal()
        let result = await sent.result
        switch result {
        case .success(let response):
            Issue.record("an upload cut short succeeded: \(response.statusCode) \(String(decoding: response.body, as: UTF8.self))")
        case .failure(let error):
            #expect(error is APIError, "\(error)")
            if case .timeout? = error as? APIError { Issue.record("the upload waited for bytes it had announced: \(error)") }
        }
        // Sent once (a POST is not retried), and the server never read it whole.
        #expect(site.received.items.filter { $0.hasPrefix("POST /upload") }.count == 1)
        #expect(await eventually(timeout: 10) { uploadBytes.items.count == 1 })
        #expect(uploadBytes.items.allSatisfy { $0.came < $0.announced }, "\(uploadBytes.items)")
        #expect(await eventually(timeout: 5) { settled.count == 2 })
        #expect(Self.cachedFiles(holding: "upload.bin", in: site) == [])
        #expect(site.leakedSecrets() == [])

        // The recording is whole, and replays the download, offline, to the same bytes.
        let replay = try site.api(mode: .replay) { $0.cache = try? HTTPCache(directory: site.folder.appendingPathComponent("cache/replay")) }
        let again = try await replay.download(route: .get("/file"), to: site.files.appendingPathComponent("again.bin")).value
        #expect(try Data(contentsOf: again.fileURL) == download)
    }
}
#endif
