import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads to a file, and resuming them, against a loopback server with range support.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DownloadTests {
    /// A directory of its own for each test, and a server that records what it receives.
    final class Fixture: Sendable {
        let directory: URL
        let server: LoopbackServer
        let received = Recorder<RecordedRequest>()
        let api: TestAPI

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-download-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let received = received
            server = try LoopbackServer { request in
                received.append(request)
                return TestServer.route(request)
            }
            api = try TestAPI(baseURL: server.baseURL)
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        var destination: URL { directory.appendingPathComponent("file.bin") }

        /// The names of the files in the directory, hidden ones included.
        var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted() }

        /// A download of `/download` with `query`, without retries unless `retries` says so.
        func download(_ query: String, replacing: Bool = false, resumingFrom resume: ResumableDownload? = nil,
                      retryPolicy: RetryPolicy = .never) -> Promise<DownloadedFile> {
            api.download(route: api.get(endpoint: "/download?\(query)"), to: destination, replacing: replacing,
                         resumingFrom: resume, options: RequestOptions(retryPolicy: retryPolicy))
        }

        /// A download of `/download` with `query`, resumed from `held` as a partial file
        /// validated by the server's `"v1"`.
        func download(_ query: String, resumingFromBytes held: Data) throws -> Promise<DownloadedFile> {
            let partial = ResumableDownload.partialFile(for: destination)
            try held.write(to: partial)
            return download(query, resumingFrom: ResumableDownload(url: URL(string: server.baseURL + "/download")!, destination: destination,
                                                                  partialFile: partial, offset: Int64(held.count), validator: #""v1""#))
        }
    }

    @Test func theBodyLandsAtTheDestinationAndNothingElseIsLeft() async throws {
        let fixture = try Fixture()
        let seen = Recorder<TransferProgress>()
        let file = try await fixture.download("bytes=300000").onProgress { seen.append($0) }.value
        #expect(file.fileURL == fixture.destination)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 300_000, version: "1"))
        #expect(file.response.statusCode == 200)
        #expect(file.response.body.isEmpty)
        #expect(file.resumedBytes == 0)
        #expect(fixture.files == ["file.bin"])
        #expect(await eventually { seen.items.last?.completedBytes == 300_000 })
        #expect(seen.items.allSatisfy { $0.direction == .download && $0.totalBytes == 300_000 })
        // A fresh download asks for no range.
        #expect(fixture.received.items.first?.headers["Range"] == nil)
    }

    @Test func anExistingFileIsKeptUnlessReplacingIsAsked() async throws {
        let fixture = try Fixture()
        try Data("old".utf8).write(to: fixture.destination)
        let refused = await apiError(of: fixture.download("bytes=1000"))
        guard case .fileFailed(let failure)? = refused else {
            Issue.record("expected fileFailed, got \(String(describing: refused))")
            return
        }
        #expect(failure.reason == .destinationExists)
        #expect(try Data(contentsOf: fixture.destination) == Data("old".utf8))
        #expect(fixture.received.items.isEmpty, "nothing is downloaded only to be thrown away")

        _ = try await fixture.download("bytes=1000", replacing: true).value
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 1000, version: "1"))
        #expect(fixture.files == ["file.bin"])
    }

    @Test func anErrorStatusLeavesNoFileAndReadsItsBody() async throws {
        let fixture = try Fixture()
        let api = fixture.api
        let error = await apiError(of: api.download(route: api.get(endpoint: "/nowhere"), to: fixture.destination))
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 404)
        #expect(String(decoding: failure.body, as: UTF8.self).contains("no route"))
        #expect(fixture.files.isEmpty)
    }

    @Test func aCutDownloadResumesFromItsBytesToAnIdenticalFile() async throws {
        let fixture = try Fixture()
        let error = await apiError(of: fixture.download("bytes=200000&cut=70000"))
        #expect(error?.caseName == "transportFailed")
        #expect(!FileManager.default.fileExists(atPath: fixture.destination.path))
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(resume.offset == 70_000)
        #expect(resume.validator == #""v1""#)

        let seen = Recorder<TransferProgress>()
        let file = try await fixture.download("bytes=200000&cut=70000", resumingFrom: resume).onProgress { seen.append($0) }.value
        #expect(file.resumedBytes == 69_999)
        #expect(file.response.statusCode == 206)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 200_000, version: "1"))
        #expect(fixture.files == ["file.bin"], "the partial file and its record are gone")
        let ranged = try #require(fixture.received.items.last)
        #expect(ranged.headers["Range"] == "bytes=69999-")
        #expect(ranged.headers["If-Range"] == #""v1""#)
        #expect(ranged.headers["Accept-Encoding"] == "identity")
        // Progress counts the bytes resumed: it starts there, not at zero.
        #expect(await eventually { seen.items.last?.completedBytes == 200_000 })
        #expect(seen.items.first?.completedBytes ?? 0 >= 69_999)
    }

    /// A 206 to a download that asked for no range is the file only when its range is the whole
    /// of it: any other part, kept as the file, would be a file cut short delivered as complete.
    @Test(arguments: [("0-99999", true), ("0-49999", false), ("1000-99999", false)])
    func aPartNobodyAskedForIsTheFileOnlyWhenItIsWhole(part: String, isWhole: Bool) async throws {
        let fixture = try Fixture()
        let result = await fixture.download("bytes=100000&part=\(part)").result
        if isWhole {
            let file = try result.get()
            #expect(file.response.statusCode == 206)
            #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 100_000, version: "1"))
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result)")
                return
            }
            #expect((failure.underlying as? URLError)?.code == .badServerResponse)
            #expect("\(failure)".contains("did not ask for"), "\(failure)")
            #expect(!FileManager.default.fileExists(atPath: fixture.destination.path))
            #expect(fixture.files.isEmpty, "no partial file is left: \(fixture.files)")
        }
        #expect(fixture.received.items.first?.headers["Range"] == nil)
    }

    /// A range the request asks for itself: its 206 is the part it asked for.
    @Test func aPartTheRequestAskedForItselfIsKept() async throws {
        let fixture = try Fixture()
        let route = fixture.api.get(endpoint: "/download?bytes=100000")
        let file = try await fixture.api.download(route: route, parameters: RangeHeader(value: "bytes=0-49999"), to: fixture.destination).value
        #expect(file.response.statusCode == 206)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 100_000, version: "1").prefix(50_000))
    }

    /// A resume record planted beside the destination (in a directory others may write to) or
    /// a resume value made up, naming another file for the bytes: never taken, so that a
    /// download cannot be made to write into, move or delete a file it did not make. The
    /// download starts over and the other file is left as it was. "another download's" names the
    /// bytes Tern keeps for a download to `file.bin.gz`, whose name starts as `file.bin`'s do.
    /// (Giving a file to another user takes root: without it, that case is not run, rather
    /// than passed.)
    @Test(arguments: ["elsewhere", "a link beside it", "another download's"] + (getuid() == 0 ? ["another user's"] : []))
    func aResumeNamingAFileTernDidNotMakeIsNotTaken(forgery: String) async throws {
        let fixture = try Fixture()
        let victim = FileManager.default.temporaryDirectory.appendingPathComponent("tern-victim-\(UUID().uuidString)")
        try Data("precious".utf8).write(to: victim)
        defer { try? FileManager.default.removeItem(at: victim) }
        var partialFile = victim
        if forgery != "elsewhere" {
            partialFile = fixture.directory.appendingPathComponent(".file.bin.\(UUID().uuidString).tern-partial")
            if forgery == "a link beside it" {
                try FileManager.default.createSymbolicLink(at: partialFile, withDestinationURL: victim)
            } else if forgery == "another download's" {
                partialFile = ResumableDownload.partialFile(for: fixture.directory.appendingPathComponent("file.bin.gz"))
                try Data("precious".utf8).write(to: partialFile)
            } else {
                try Data("precious".utf8).write(to: partialFile)
                #expect(chown(partialFile.path, 65534, 65534) == 0)
            }
        }
        let forged = ResumableDownload(url: try #require(URL(string: fixture.server.baseURL + "/download?bytes=1000")), destination: fixture.destination,
                                       partialFile: partialFile, offset: 3, validator: #""v1""#)
        try JSONEncoder().encode(forged).write(to: ResumableDownload.recordFile(for: fixture.destination))
        #expect(ResumableDownload.pending(for: fixture.destination) == nil)

        let file = try await fixture.download("bytes=1000", replacing: true, resumingFrom: forged).value
        #expect(file.resumedBytes == 0)
        #expect(fixture.received.items.first?.headers["Range"] == nil)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 1000, version: "1"))
        forged.discard()
        #expect(try Data(contentsOf: victim) == Data("precious".utf8))
        if forgery == "another user's" || forgery == "another download's" {
            #expect(try Data(contentsOf: partialFile) == Data("precious".utf8))
        }
    }

    /// A record Tern wrote itself is still taken.
    @Test func aRecordTernWroteIsTaken() async throws {
        let fixture = try Fixture()
        _ = await apiError(of: fixture.download("bytes=120000&cut=40000"))
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(resume.keepsItsBytesBesideItsDestination)
        let file = try await fixture.download("bytes=120000", resumingFrom: resume).value
        #expect(file.resumedBytes == 39_999)
    }

    /// Parameters that only set a `Range` header.
    struct RangeHeader: RequestParameters {
        let value: String
        var headers: HTTPHeaders { ["Range": value] }
        func encode(into draft: inout RequestDraft) throws {}
    }

    @Test func aRetryGoesOnFromTheBytesTheFailedAttemptWrote() async throws {
        let fixture = try Fixture()
        let file = try await fixture.download("bytes=150000&cut=50000", retryPolicy: RetryPolicy(baseDelay: 0.01, jitter: false)).value
        #expect(file.resumedBytes == 49_999)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 150_000, version: "1"))
        #expect(fixture.received.items.map { $0.headers["Range"] } == [nil, "bytes=49999-"])
        #expect(fixture.files == ["file.bin"])
    }

    @Test(arguments: [
        ("ignoreRange", "1"),  // the server ignores Range: a 200, written from the start
        ("shift", "1"),  // a 206 from another offset than the one asked: not appended
        ("", "2"),  // the file changed: If-Range fails, a 200 with the new content
        ("unvalidated", "2"),  // a 206 of the changed file that names no validator: not appended
    ])
    func aServerThatDoesNotGoOnWhereAskedGetsAFreshDownload(option: String, version: String) async throws {
        let fixture = try Fixture()
        _ = await apiError(of: fixture.download("bytes=120000&cut=40000"))
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        let file = try await fixture.download("bytes=120000&version=\(version)&\(option)", resumingFrom: resume).value
        #expect(file.resumedBytes == 0)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 120_000, version: version))
        #expect(fixture.files == ["file.bin"])
    }

    /// Bytes that are already the whole file (the app stopped as its download ended): the
    /// resume asks from the last byte held, gets that byte again, and delivers the file, with
    /// nothing fetched anew.
    @Test func aResumeOfBytesAlreadyWholeFetchesOneByte() async throws {
        let fixture = try Fixture()
        let body = TestServer.downloadBody(bytes: 3000, version: "1")
        let file = try await fixture.download("bytes=3000", resumingFromBytes: body).value
        #expect(file.resumedBytes == 2999)
        #expect(file.response.statusCode == 206)
        #expect(try Data(contentsOf: fixture.destination) == body)
        #expect(fixture.received.items.map(\.headers["Range"]) == ["bytes=2999-"])
        #expect(fixture.files == ["file.bin"])
    }

    @Test func aResumedByteThatCameBackDifferentStartsOver() async throws {
        let fixture = try Fixture()
        let body = TestServer.downloadBody(bytes: 3000, version: "1")
        // The file on disk, or the server's under the same validator, changed at the byte held:
        // the bytes held are another file's, however the 206 looks.
        var held = body.prefix(2000)
        held[1999] ^= 0xFF
        let file = try await fixture.download("bytes=3000", resumingFromBytes: held).value
        #expect(file.resumedBytes == 0)
        #expect(file.response.statusCode == 200)
        #expect(try Data(contentsOf: fixture.destination) == body)
        #expect(fixture.received.items.map(\.headers["Range"]) == ["bytes=1999-", nil])
        #expect(fixture.files == ["file.bin"])
    }

    @Test func a416StartsOver() async throws {
        let fixture = try Fixture()
        // A record of more bytes than the file now has: the server refuses the range.
        let partial = ResumableDownload.partialFile(for: fixture.destination)
        try Data(count: 5000).write(to: partial)
        let resume = ResumableDownload(url: URL(string: fixture.server.baseURL + "/download")!, destination: fixture.destination,
                                       partialFile: partial, offset: 5000, validator: #""v1""#)
        let file = try await fixture.download("bytes=3000", resumingFrom: resume).value
        #expect(file.resumedBytes == 0)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 3000, version: "1"))
        #expect(fixture.received.items.map(\.headers["Range"]) == ["bytes=4999-", nil])
        #expect(fixture.files == ["file.bin"])
    }

    @Test func lastModifiedServesWhenThereIsNoETag() async throws {
        let fixture = try Fixture()
        _ = await apiError(of: fixture.download("bytes=90000&cut=30000&validator=lastModified"))
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(resume.validator.hasSuffix("GMT"))
        let file = try await fixture.download("bytes=90000&validator=lastModified", resumingFrom: resume).value
        #expect(file.resumedBytes == 29_999)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 90_000, version: "1"))
    }

    @Test(arguments: ["weak", "none", "lastModifiedNow"])
    func withoutAStrongValidatorAFailureLeavesNothingBehind(validator: String) async throws {
        let fixture = try Fixture()
        let error = await apiError(of: fixture.download("bytes=90000&cut=30000&validator=\(validator)"))
        #expect(error?.caseName == "transportFailed")
        #expect(ResumableDownload.pending(for: fixture.destination) == nil)
        #expect(fixture.files.isEmpty)
    }

    @Test func aCancelledDownloadKeepsItsBytesAndDiscardRemovesThem() async throws {
        let fixture = try Fixture()
        let promise = fixture.download("bytes=200000&stall=60000")
        let seen = Recorder<TransferProgress>()
        promise.onProgress { seen.append($0) }
        #expect(await eventually { seen.items.last?.completedBytes == 60_000 })
        promise.cancel()
        #expect(await apiError(of: promise)?.isCancellation == true)
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(resume.offset == 60_000)
        #expect(fileSize(of: resume.partialFile) == 60_000)
        resume.discard()
        #expect(fixture.files.isEmpty)
    }

    /// Where the resume record goes, a directory of the user's: the record cannot be written, so
    /// the bytes it would name are not kept either (nothing could find them), and nothing else is
    /// left, not the record's half-written copy; the directory is untouched. Once it is gone,
    /// the download arrives whole.
    @Test func aResumeRecordThatCannotBeWrittenLeavesNoBytesBehind() async throws {
        let fixture = try Fixture()
        let record = ResumableDownload.recordFile(for: fixture.destination)
        try FileManager.default.createDirectory(at: record.appendingPathComponent("inside"), withIntermediateDirectories: true)
        let error = await apiError(of: fixture.download("bytes=200000&cut=70000"))
        #expect(error?.caseName == "transportFailed")
        #expect(ResumableDownload.pending(for: fixture.destination) == nil)
        #expect(fixture.files == [record.lastPathComponent])
        #expect((try? FileManager.default.contentsOfDirectory(atPath: record.path)) == ["inside"])

        try FileManager.default.removeItem(at: record)
        _ = try await fixture.download("bytes=200000").value
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 200_000, version: "1"))
        #expect(fixture.files == ["file.bin"])
    }

    @Test func aTimedOutDownloadCanBeResumed() async throws {
        let fixture = try Fixture()
        let clock = TestClock()
        let api = try TestAPI(baseURL: fixture.server.baseURL, clock: clock)
        let stalled = api.download(route: api.get(endpoint: "/download?bytes=100000&stall=25000"), to: fixture.destination,
                                   options: RequestOptions(timeout: 5, retryPolicy: .never))
        let seen = Recorder<TransferProgress>()
        stalled.onProgress { seen.append($0) }
        #expect(await eventually { seen.items.last?.completedBytes == 25_000 })
        clock.advance(by: 5)
        let error = await apiError(of: stalled)
        #expect(error?.caseName == "timeout")
        // It says how a long download is given time (a user's first 200 MB download, timed out,
        // said only "timed out after 2.0 s").
        #expect(error.map { "\($0)" }?.hasSuffix("timed out after 5.0 s: a download's timeout spans its whole transfer. Give one that may "
            + "run longer a timeout of its own (RequestOptions(timeout:)), or .infinity with an idle timeout "
            + "(RequestOptions(idleTimeout:)), which ends it only when its bytes stop coming.") == true, "\(String(describing: error))")
        let resume = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(resume.offset == 25_000)
        let file = try await fixture.download("bytes=100000", resumingFrom: resume).value
        #expect(file.resumedBytes == 24_999)
        #expect(try Data(contentsOf: fixture.destination) == TestServer.downloadBody(bytes: 100_000, version: "1"))
        #expect(fixture.files == ["file.bin"])
    }

    /// A destination in a folder that is not there, or is a file: the download fails typed before
    /// it is sent (it was sent, its answer read, and it failed naming a partial file), saying
    /// which folder to create; no folder is made.
    @Test(arguments: ["missing/file.bin", "missing/deeper/file.bin", "a-file/file.bin"])
    func aDestinationInNoDirectoryFailsBeforeItIsSentSayingSo(path: String) async throws {
        let fixture = try Fixture()
        let api = fixture.api
        try Data("mine".utf8).write(to: fixture.directory.appendingPathComponent("a-file"))
        let nowhere = fixture.directory.appendingPathComponent(path)
        let error = await apiError(of: api.download(route: api.get(endpoint: "/download?bytes=1000"), to: nowhere))
        guard case .fileFailed(let failure)? = error else {
            Issue.record("expected fileFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .writeFailed)
        #expect("\(failure)".contains("its folder \(nowhere.deletingLastPathComponent().path) does not exist; create it first"), "\(failure)")
        #expect(fixture.received.items.isEmpty)
        #expect(fixture.files == ["a-file"])
    }

    /// Downloads cancelled at every stage: each settles once, and what is left on disk is the
    /// file, complete, or bytes that can be resumed, and nothing else.
    @Test func aCancelStormLeavesOnlyWholeFilesOrResumableBytes() async throws {
        let fixture = try Fixture()
        let api = fixture.api
        let destinations = (0..<40).map { fixture.directory.appendingPathComponent("file-\($0).bin") }
        let promises = destinations.map { destination in
            api.download(route: api.get(endpoint: "/download?bytes=200000"), to: destination, options: RequestOptions(retryPolicy: .never))
        }
        for (index, promise) in promises.enumerated() {
            if index % 4 == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
            promise.cancel()
        }
        let whole = TestServer.downloadBody(bytes: 200_000, version: "1")
        var outcomes: [String: Int] = [:]
        for (promise, destination) in zip(promises, destinations) {
            let error = await apiError(of: promise)
            outcomes[error?.caseName ?? "downloaded", default: 0] += 1
            if error == nil {
                #expect(try Data(contentsOf: destination) == whole)
            } else if FileManager.default.fileExists(atPath: destination.path) {
                // A cancel that came as the finished file was moved into place: it is whole.
                #expect(try Data(contentsOf: destination) == whole)
            } else {
                if let resume = ResumableDownload.pending(for: destination) {
                    #expect(try Data(contentsOf: resume.partialFile) == whole.prefix(Int(resume.offset)))
                    resume.discard()
                }
            }
        }
        #expect(outcomes.values.reduce(0, +) == 40)
        #expect(Set(outcomes.keys).isSubset(of: ["downloaded", "cancelled"]), "\(outcomes)")
        let left = fixture.files.filter { !$0.hasPrefix("file-") }
        #expect(left.isEmpty, "temporary files left: \(left)")
    }

    @Test func aFileOverItsAnnouncedLimitIsRefusedAtItsHead() async throws {
        let fixture = try Fixture()
        let download = fixture.api.download(route: fixture.api.get(endpoint: "/download?bytes=200000"), to: fixture.destination,
                                            maximumSize: 100_000)
        let failure = try #require(await tooLarge(download))
        #expect(failure.limit == 100_000 && failure.declaredLength == 200_000 && failure.receivedBytes == 0)
        // It names the download's own limit, which the configuration's does not raise.
        #expect(failure.description.contains("the file is over the download's limit of 100000 bytes (it announced 200000 bytes)"), "\(failure)")
        #expect(failure.description.hasSuffix("Raise the limit with download(route:to:maximumSize:)."), "\(failure)")
        #expect(await eventually { fixture.files.isEmpty })
        #expect(ResumableDownload.pending(for: fixture.destination) == nil)
    }

    @Test func anEndlessBodyStopsAtTheLimitAndLeavesNothing() async throws {
        let fixture = try Fixture()
        let endless = try LoopbackServer { _ in ServerResponse(body: Data(repeating: 7, count: 64 << 10)).with(.endless) }
        defer { endless.stop() }
        let download = fixture.api.download(route: .get(endless.baseURL + "/forever"), to: fixture.destination, maximumSize: .megabytes(1))
        let failure = try #require(await tooLarge(download))
        #expect(failure.limit == 1 << 20 && failure.declaredLength == nil && failure.receivedBytes > 1 << 20)
        #expect(failure.description.contains("the file is over the download's limit of 1 MiB (it passed it at "), "\(failure)")
        #expect(!failure.description.contains("maximumResponseSize"), "\(failure)")
        #expect(await eventually { fixture.files.isEmpty })
        #expect(await eventuallyClosed(endless))
    }

    /// A cancel that comes once the answer is taken, before its file is moved into place: the
    /// promise says cancelled, so the move is refused and the bytes stay for a resume. (A file
    /// delivered under a cancelled promise, its resume record removed only after the caller had
    /// looked, was found racing the end in `ResumedDownloadCancelAttackTests`.)
    @Test func aFileAbandonedBeforeItsMoveIsNotDelivered() throws {
        let fixture = try Fixture()
        let url = try #require(URL(string: "http://127.0.0.1/file"))
        let file = DownloadFile(destination: fixture.destination, replacing: false, resumingFrom: nil)
        let head = try #require(ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                             headers: ["Content-Length": "5", "ETag": "\"v1\""]))
        #expect(try file.target(for: head) == .file(offset: 0, total: 5))
        try file.write(Data("hello".utf8))
        try file.endOfBody()
        file.abandon()
        let response = Response(request: URLRequest(url: url), head: head, body: Data(), timing: .init(start: Date(), duration: 0))
        let error = #expect(throws: APIError.self) { try file.deliver(response) }
        #expect(error?.isCancellation == true, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: fixture.destination.path))
        let kept = try #require(ResumableDownload.pending(for: fixture.destination))
        #expect(kept.offset == 5 && FileManager.default.contents(atPath: kept.partialFile.path) == Data("hello".utf8))
    }

    @Test func contentRangeIsReadStrictly() {
        #expect(ContentRange("bytes 10-99/100") == ContentRange("bytes 10-99/100"))
        #expect(ContentRange("bytes 10-99/100")?.start == 10)
        #expect(ContentRange("bytes 10-99/*")?.total == nil)
        #expect(ContentRange("bytes 10-99/*") != nil)
        for invalid in [nil, "", "bytes */100", "bytes 10-9/100", "bytes 10-99/99", "items 0-1/2", "bytes -1-5/10", "bytes 1-2"] {
            #expect(ContentRange(invalid) == nil, "\(String(describing: invalid))")
        }
    }
}
