#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// Where a request's own file waiting for a descriptor (``DescriptorOwnFilesWaitTests``) meets
/// the features around it, in a child process whose descriptors are taken once the download's
/// socket is open, and its head comes once they are: a download cancelled while it waits,
/// redirected, retried after a 503, resumed from a partial file, cut short by its server, or
/// larger than its size limit, each settles once, typed, leaving nothing but a resumable partial
/// file beside its destination and a delivered file with exactly the server's bytes, its progress
/// never going backwards; a 50 MB download that waits a second is held, not gathered in memory
/// (URLSession, which cannot hold it back, fails once 8 MiB are held:
/// ``ExchangeStateTests/whileTheFileWaitsWhatIsHeldIsBounded()``); an upload (file, multipart) that waits while a stream and a plain request hold
/// sockets runs again and arrives whole, or fails typed when its file is deleted meanwhile.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct OwnFileWaitSeamAttackTests {
    static let content = DescriptorFilesAttackTests.content(7)
    static let bigSize = 50 << 20

    /// Byte `index` of `/huge`'s body.
    static func hugeByte(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: index % 251) }

    /// `/huge`'s body, made once: made as it was sent, it came too slowly for the bound on what
    /// is held while a file waits to be reached.
    static let hugeBody: [UInt8] = {
        let pattern = (0..<251).map(hugeByte)
        var body: [UInt8] = []
        body.reserveCapacity(bigSize + pattern.count)
        while body.count < bigSize { body += pattern }
        return Array(body.prefix(bigSize))
    }()

    /// The server: see each path in the switch. Every download's head comes once the child asks
    /// for `/release` (``DescriptorOwnFilesWaitTests/Hold``), but for the second leg of a
    /// redirect or a retry, which follows at once.
    static func server() throws -> RawServer {
        let retried = Recorder<Int>()
        let hold = DescriptorOwnFilesWaitTests.Hold()
        return try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let close = "Connection: close\r\n"
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
                let all = Array(content.utf8)
                switch path {
                case "/d":
                    hold.waitForRelease()
                    guard connection.send(RawServer.Connection.response(content)) else { return }
                    hold.heldWentOut()
                case "/d-cookie", "/d-cached":
                    hold.waitForRelease()
                    let headers = path == "/d-cookie" ? "Set-Cookie: seam=7; Path=/; Max-Age=600\r\n" : "Cache-Control: max-age=60\r\nETag: \"c7\"\r\n"
                    guard connection.send(RawServer.Connection.response(content, headers: headers)) else { return }
                    hold.heldWentOut()
                case "/echo-cookie":
                    let cookie = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("cookie: ") }.map { String($0.dropFirst(8)) }
                    _ = connection.send(RawServer.Connection.response(cookie ?? "none", headers: close))
                    return
                case "/redirect":
                    hold.waitForRelease()
                    guard connection.send(RawServer.Connection.response("", status: "302 Found", headers: "Location: /d-now\r\n")) else { return }
                    hold.heldWentOut()
                case "/d-now":
                    guard connection.send(RawServer.Connection.response(content)) else { return }
                case "/retry":
                    retried.append(1)
                    if retried.items.count == 1 {
                        hold.waitForRelease()
                        guard connection.send(RawServer.Connection.response("busy", status: "503 Service Unavailable")) else { return }
                        hold.heldWentOut()
                    } else {
                        guard connection.send(RawServer.Connection.response(content)) else { return }
                    }
                case "/cut", "/cut-tagged":
                    // Half the body of the length announced, then the connection closes; the
                    // tagged one answers a range from where it stopped, once released.
                    let tag = path == "/cut-tagged" ? "ETag: \"v1\"\r\n" : ""
                    if let range = request.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("range: bytes=") }),
                       let from = Int(range.dropFirst("range: bytes=".count).prefix { $0.isNumber }) {
                        hold.waitForRelease()
                        let head = "HTTP/1.1 206 Partial Content\r\n\(tag)Content-Range: bytes \(from)-\(all.count - 1)/\(all.count)\r\n"
                            + "Content-Length: \(all.count - from)\r\n\r\n"
                        guard connection.send(Array(head.utf8) + all[from...]) else { return }
                        hold.heldWentOut()
                        continue
                    }
                    if path == "/cut" { hold.waitForRelease() }
                    let head = "HTTP/1.1 200 OK\r\n\(tag)Content-Length: \(all.count)\r\n\r\n"
                    guard connection.send(Array(head.utf8) + all[..<(all.count / 2)]) else { return }
                    if path == "/cut" { hold.heldWentOut() }
                    // Its socket open a while longer, for the child to see it under load.
                    if path == "/cut" { connection.pause(200) }
                    return
                case "/big":
                    hold.waitForRelease()
                    // The rest never comes; the connection stays open past the test's wait.
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + content) else { return }
                    hold.heldWentOut()
                    connection.pause(2000)
                    return
                case "/big-chunked":
                    hold.waitForRelease()
                    var chunks = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    for _ in 0..<4 { chunks += String(content.utf8.count, radix: 16) + "\r\n" + content + "\r\n" }
                    guard connection.send(chunks + "0\r\n\r\n") else { return }
                    hold.heldWentOut()
                case "/huge":
                    hold.waitForRelease()
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(bigSize)\r\n\r\n") else { return }
                    hold.heldWentOut()
                    let block = 1 << 20
                    for start in stride(from: 0, to: bigSize, by: block) {
                        guard connection.send(Array(hugeBody[start..<(start + block)])) else { return }
                    }
                case "/hold":
                    hold.waitForRelease()
                    guard connection.send(RawServer.Connection.response("held")) else { return }
                    hold.heldWentOut()
                case "/s":
                    // A stream: its head at once, its one line once `/release` is asked for.
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n") else { return }
                    hold.waitForRelease()
                    guard connection.send("s line\n") else { return }
                    hold.heldWentOut()
                case "/release":
                    hold.release()
                    _ = connection.send(RawServer.Connection.response("released", headers: close))
                    return
                case "/u":
                    let verdict = body == content ? "whole" : body == content + "grown\n" ? "grown" : "other \(body.utf8.count)"
                    _ = connection.send(RawServer.Connection.response(verdict, headers: close))
                    return
                case "/m":
                    let verdict = body.contains(content) && body.contains("caption 7") ? "whole" : "other \(body.utf8.count)"
                    _ = connection.send(RawServer.Connection.response(verdict, headers: close))
                    return
                default:
                    _ = connection.send(RawServer.Connection.response("warm", headers: close))
                    return
                }
            }
        }
    }

    static let downloadScenarios = ["plain", "cancel", "redirect", "retry", "resume", "cut", "tooLarge", "tooLargeChunked"]

    #if os(Linux) && compiler(>=6.3)
    /// The process's resident size, in bytes.
    static func residentBytes() -> Int {
        let fields = ((try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "").split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking makes and closes descriptors of its own as it will: which one a file finds cannot be arranged"), arguments: downloadScenarios)
    func aDownloadWaitingForItsFileMeetsAnotherFeature(scenario: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, scenario = scenario as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let (api, folder) = await DescriptorOwnFilesWaitTests.preparedChild("tern-own-file-seams", base: base)
                defer { try? manager.removeItem(at: folder) }
                let destination = folder.appendingPathComponent("file.txt")
                var resume: ResumableDownload?
                if scenario == "resume" {
                    // Half the file first, kept to go on from.
                    let first = api.download(route: .get(base + "/cut-tagged"), to: destination)
                    print("first: \(await DescriptorFilesAttackTests.settledOnce(first) { _ in "delivered" })")
                    resume = ResumableDownload.pending(for: destination)
                    print("kept: \(resume?.offset ?? -1)")
                }
                try? await Task.sleep(for: .milliseconds(100))
                let line = DescriptorOwnFilesWaitTests.releaseLine(to: base)
                let before = DescriptorWaitAttackTests.sockets()
                let path = ["redirect": "/redirect", "retry": "/retry", "resume": "/cut-tagged", "cut": "/cut",
                            "tooLarge": "/big", "tooLargeChunked": "/big-chunked"][scenario] ?? "/d"
                let options = RequestOptions(retryPolicy: scenario == "retry" ? RetryPolicy(maxRetries: 2, baseDelay: 0.05) : nil)
                // None free for the file when the head comes; but a redirect or a retry may need
                // a second socket: its descriptors are taken once its first socket is open.
                let early = ["redirect", "retry"].contains(scenario) ? [] : DescriptorOwnFilesWaitTests.takeAllButOneForASocket()
                let download = api.download(route: .get(base + path), to: destination, replacing: true,
                                            maximumSize: scenario.hasPrefix("tooLarge") ? 1000 : .unlimited,
                                            resumingFrom: resume, options: options)
                let progress = Recorder<Int64>()
                _ = download.onProgress(in: .global()) { if $0.direction == .download { progress.append($0.completedBytes) } }
                let settled = Recorder<Int>()
                download.finally { settled.append(1) }
                let outcome = Task.onTestThreads {
                    await DescriptorFilesAttackTests.settledOnce(download) { file in
                        guard file.fileURL == destination else { return "wrong file" }
                        return "ok, \(file.resumedBytes > 0 ? "resumed" : "whole")"
                    }
                }
                guard await DescriptorOwnFilesWaitTests.newSocket(after: before) else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("no new socket seen") }
                // The head comes once released: no descriptor is then free for the file. A body
                // announced too large is refused at its head, with no file to wait for.
                let spare = early.isEmpty || scenario == "tooLarge" ? [] : DescriptorOwnFilesWaitTests.takeTheSpare { !settled.items.isEmpty }
                let taken = early + spare + (await DescriptorOwnFilesWaitTests.keepFileDescriptorsTaken(for: 900, releasingOver: line))
                print("settled before a descriptor was free: \(settled.items.count)")
                if scenario == "cancel" { download.cancel() }
                try? await Task.sleep(for: .milliseconds(100))
                taken.forEach { close($0) }
                print("download: \(await outcome.value)")
                let bytes = (try? String(contentsOf: destination, encoding: .utf8)).map { $0 == Self.content ? "right" : "wrong \($0.utf8.count)" }
                print("file: \(bytes ?? "none")")
                let beside = ((try? manager.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0 != "file.txt" }
                print("beside: \(beside.count)")
                let reports = progress.items
                print("progress goes back: \(zip(reports, reports.dropFirst()).contains { $0 > $1 })")
                print("progress last: \(reports.last.map { $0 == Int64(Self.content.utf8.count) ? "whole" : "\($0)" } ?? "none")")
                // The transport goes on as before.
                let again: Promise<String> = api.request(route: .get(base + "/warm"))
                print("after: \((try? await again.value) ?? "failed")")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        if DescriptorOwnFilesWaitTests.excusesUnsetScene(printed) { return }
        let lines = printed.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("first: ") && !$0.hasPrefix("kept: ") }
        let delivered = ["plain", "redirect", "retry", "resume"].contains(scenario)
        let failure = ["cancel": "typed cancelled", "cut": "typed transportFailed", "tooLarge": "typed responseTooLarge",
                       "tooLargeChunked": "typed responseTooLarge"][scenario]
        // Refused at its head, a body announced larger than the file may be needs no file; a
        // transport that reads on while the transfer is held (FoundationNetworking) hears the
        // server close the connection meanwhile, and fails then.
        let settledEarly = scenario == "tooLarge" || (scenario == "cut" && !TestTransport.pauses)
        let expected = [
            "settled before a descriptor was free: \(settledEarly ? 1 : 0)",
            "download: " + (failure ?? (scenario == "resume" ? "ok, resumed" : "ok, whole")),
            "file: " + (delivered ? "right" : "none"),
            "beside: 0",
            "progress goes back: false",
            "progress last: " + (delivered ? "whole" : lines.first { $0.hasPrefix("progress last: ") }.map { String($0.dropFirst(15)) } ?? "?"),
            "after: warm",
        ]
        #expect(lines == expected, "\(printed)")
        if scenario == "resume" { #expect(printed.contains("kept: \(Self.content.utf8.count / 2)"), "\(printed)") }
    }

    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking makes and closes descriptors of its own as it will: which one a file finds cannot be arranged"))
    func aLargeDownloadWhoseFileWaitsIsHeldNotGathered() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let (api, folder) = await DescriptorOwnFilesWaitTests.preparedChild("tern-own-file-seams", base: base, timeout: 30)
                defer { try? manager.removeItem(at: folder) }
                let destination = folder.appendingPathComponent("huge.bin")
                let line = DescriptorOwnFilesWaitTests.releaseLine(to: base)
                let before = DescriptorWaitAttackTests.sockets()
                let resident = Self.residentBytes()
                let early = DescriptorOwnFilesWaitTests.takeAllButOneForASocket()
                let download = api.download(route: .get(base + "/huge"), to: destination)
                let outcome = Task.onTestThreads { await DescriptorFilesAttackTests.settledOnce(download) { _ in "ok" } }
                guard await DescriptorOwnFilesWaitTests.newSocket(after: before) else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("no new socket seen") }
                var peak = resident
                let spare = DescriptorOwnFilesWaitTests.takeTheSpare()
                let taken = early + spare + (await DescriptorOwnFilesWaitTests.keepFileDescriptorsTaken(for: 1200, releasingOver: line, meanwhile: { peak = max(peak, Self.residentBytes()) }))
                taken.forEach { close($0) }
                print("grew while held, MB: \((peak - resident) >> 20)")
                print("download: \(await outcome.value)")
                var right = false
                if let handle = try? FileHandle(forReadingFrom: destination) {
                    var index = 0
                    right = true
                    while let block = try? handle.read(upToCount: 1 << 20), !block.isEmpty {
                        for byte in block {
                            if byte != Self.hugeByte(index) { right = false }
                            index += 1
                        }
                    }
                    right = right && index == Self.bigSize
                }
                print("file right: \(right)")
                // The measure itself: the file read into memory grows the process by its size.
                let control = Self.residentBytes()
                let whole = try? Data(contentsOf: destination)
                print("control grew by the file: \(Self.residentBytes() - control >= Self.bigSize * 3 / 4 && whole?.count == Self.bigSize)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        if DescriptorOwnFilesWaitTests.excusesUnsetScene(printed) { return }
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines.contains("download: ok"), "\(printed)")
        #expect(lines.contains("file right: true"), "\(printed)")
        #expect(lines.contains("control grew by the file: true"), "\(printed)")
        let grew = lines.first { $0.hasPrefix("grew while held, MB: ") }.flatMap { Int($0.dropFirst(21)) }
        #expect(grew.map { $0 < 20 } == true, "\(printed)")
    }

    /// A download waiting for its file beside a disk cache, a cookie jar kept in a file, or a
    /// HAR recording, each of which opens files of its own: delivered whole, and the feature
    /// keeps what it came with (a second download of the cached answer right, the cookie sent
    /// and in the jar's file, the exchange in the recording).
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking makes and closes descriptors of its own as it will: which one a file finds cannot be arranged"), arguments: ["cache", "cookies", "har"])
    func aDownloadWaitingBesideAFeatureWithFilesOfItsOwn(feature: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, feature = feature as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-own-file-seams-\(getpid())")
                defer { try? manager.removeItem(at: folder) }
                let jarFile = folder.appendingPathComponent("jar.json")
                let harFile = folder.appendingPathComponent("recording.har")
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil,
                      DescriptorWaitAttackTests.lowerLimit(spare: 40), let upstream = TestTransport.make(),
                      let cache = try? HTTPCache(directory: folder.appendingPathComponent("cache")) else { exit(2) }
                let recording = feature == "har" ? try? RecordingTransport(file: harFile, mode: .record, upstream: upstream) : nil
                let transport: any Transport = recording ?? upstream
                let configuration = APIConfiguration(timeout: 10, retryPolicy: .never,
                                                     cookies: feature == "cookies" ? .shared(CookieJar(file: jarFile)) : .inAJarOfItsOwn,
                                                     cache: feature == "cache" ? cache : nil)
                let api = AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
                let warm: Promise<String> = api.request(route: .get(base + "/warm"))
                guard (try? await warm.value) == "warm" else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("the first request failed") }
                try? await Task.sleep(for: .milliseconds(100))
                let line = DescriptorOwnFilesWaitTests.releaseLine(to: base)
                let before = DescriptorWaitAttackTests.sockets()
                let destination = folder.appendingPathComponent("file.txt")
                let path = ["cache": "/d-cached", "cookies": "/d-cookie"][feature] ?? "/d"
                let download = api.download(route: .get(base + path), to: destination)
                let outcome = Task.onTestThreads { await DescriptorFilesAttackTests.settledOnce(download) { _ in "ok" } }
                guard await DescriptorOwnFilesWaitTests.newSocket(after: before) else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("no new socket seen") }
                let taken = await DescriptorOwnFilesWaitTests.keepFileDescriptorsTaken(for: 900, releasingOver: line)
                taken.forEach { close($0) }
                print("download: \(await outcome.value)")
                print("file: \((try? String(contentsOf: destination, encoding: .utf8)) == Self.content ? "right" : "wrong")")
                switch feature {
                case "cache":
                    let second = folder.appendingPathComponent("second.txt")
                    let again = api.download(route: .get(base + path), to: second)
                    print("again: \(await DescriptorFilesAttackTests.settledOnce(again) { _ in "ok" })")
                    print("kept: \((try? String(contentsOf: second, encoding: .utf8)) == Self.content ? "right" : "wrong")")
                case "cookies":
                    let echo: Promise<String> = api.request(route: .get(base + "/echo-cookie"))
                    print("again: \(await DescriptorFilesAttackTests.settledOnce(echo) { $0 })")
                    print("kept: \(((try? String(contentsOf: jarFile, encoding: .utf8)) ?? "").contains("seam") ? "right" : "wrong")")
                default:
                    let again: Promise<String> = api.request(route: .get(base + "/warm"))
                    print("again: \(await DescriptorFilesAttackTests.settledOnce(again) { $0 == "warm" ? "ok" : $0 })")
                    let recorded = (try? String(contentsOf: harFile, encoding: .utf8)) ?? ""
                    print("kept: \(recorded.contains("/d\"") && recorded.contains("/warm") ? "right" : "wrong")")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        if DescriptorOwnFilesWaitTests.excusesUnsetScene(printed) { return }
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == ["download: ok", "file: right", "again: " + (feature == "cookies" ? "seam=7" : "ok"), "kept: right"], "\(printed)")
    }

    /// "file", "multipart": arrives whole; "deleted": its file gone while it waits, fails typed,
    /// never sends a body cut short; "grown": its file longer once it runs again, arrives as it was
    /// or as it is, never a mix.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "the wait for another exchange to end is libcurl's"),
          arguments: ["file", "multipart", "deleted", "grown"])
    func anUploadWaitingWhileAStreamAndARequestHoldSockets(scenario: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, scenario = scenario as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let source = manager.temporaryDirectory.appendingPathComponent("tern-own-file-seams-\(getpid()).txt")
                defer { try? manager.removeItem(at: source) }
                guard manager.createFile(atPath: source.path, contents: Data(Self.content.utf8)),
                      DescriptorWaitAttackTests.lowerLimit(spare: 40), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                let parameters: any RequestParameters = scenario == "multipart"
                    ? MultipartParameters(parts: [Part(name: "caption", value: "caption 7"), Part(name: "file", fileURL: source, filename: "f.txt")])
                    : BodyParameters(source)
                let path = scenario == "multipart" ? "/m" : "/u"
                let warm: Promise<String> = api.request(route: .post(base + path), parameters: parameters)
                guard (try? await warm.value) == "whole" else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("the first request failed") }
                let stream = Task.onTestThreads { await DescriptorWaitAttackTests.streamLines(api, base + "/s") }
                try? await Task.sleep(for: .milliseconds(200))
                let before = DescriptorWaitAttackTests.sockets()
                let held: Promise<String> = api.request(route: .get(base + "/hold"))
                guard await DescriptorOwnFilesWaitTests.newSocket(after: before) else { DescriptorOwnFilesWaitTests.couldNotSetTheScene("no new socket seen") }
                var taken = DescriptorWaitAttackTests.takeDescriptors(leaving: 0, reserve: 8)
                close(taken.removeFirst())
                let settled = Recorder<Int>()
                let upload: Promise<String> = api.request(route: .post(base + path), parameters: parameters)
                upload.finally { settled.append(1) }
                try? await Task.sleep(for: .milliseconds(400))
                if scenario == "deleted" { try? manager.removeItem(at: source) }
                if scenario == "grown", let handle = try? FileHandle(forWritingTo: source) {
                    _ = try? handle.seekToEnd()
                    try? handle.write(contentsOf: Data("grown\n".utf8))
                    try? handle.close()
                }
                try? await Task.sleep(for: .milliseconds(100))
                print("settled while the other ran: \(settled.items.count)")
                taken.forEach { close($0) }
                DescriptorOwnFilesWaitTests.release(base)
                print("upload: \(await DescriptorFilesAttackTests.settledOnce(upload) { $0 })")
                print("held: \((try? await held.value) ?? "failed")")
                print("stream: \(await stream.value)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        if DescriptorOwnFilesWaitTests.excusesUnsetScene(printed) { return }
        let lines = printed.split(separator: "\n").map(String.init)
        let upload = lines.first { $0.hasPrefix("upload: ") } ?? "none"
        print("OwnFileWaitSeamAttackTests: \(scenario) \(upload)")
        switch scenario {
        case "deleted": #expect(upload.hasPrefix("upload: typed ") && !upload.contains("settled"), "\(printed)")
        case "grown": #expect(["upload: whole", "upload: grown"].contains(upload) || (upload.hasPrefix("upload: typed ") && !upload.contains("settled")), "\(printed)")
        default: #expect(upload == "upload: whole", "\(printed)")
        }
        #expect(lines.contains("settled while the other ran: 0"), "\(printed)")
        #expect(lines.contains("held: held"), "\(printed)")
        #expect(lines.contains("stream: [\"s line\"]"), "\(printed)")
    }
    #endif
}

#if os(Linux) && compiler(>=6.3)
extension DescriptorWaitAttackTests {
    /// A stream's lines, or what came instead.
    static func streamLines(_ api: AbstractAPI, _ url: String) async -> String {
        do {
            var lines: [String] = []
            for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
            return "\(lines)"
        } catch let error as APIError {
            return "typed \(error.caseName)"
        } catch {
            return "untyped \(error)"
        }
    }
}
#endif
