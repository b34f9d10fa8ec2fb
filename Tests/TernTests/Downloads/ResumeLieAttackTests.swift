import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Resumed downloads against servers that lie about the rest of the file: another version's
/// bytes under a range that starts right, a body longer or shorter than its `Content-Range`,
/// a resume sent elsewhere by a redirect, a partial file that became a directory. The file
/// delivered is the server's current version byte for byte, or the promise fails typed and no
/// file is delivered; no record is left beside a delivered file.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct ResumeLieAttackTests {
    typealias Lie = ResumeLie

    /// The server has version 2 now, and ignores `If-Range`: the range it sends starts at the
    /// byte asked for, which both versions share, but names the new `ETag`. Not appended: the
    /// download starts over and delivers version 2.
    @Test func aRangeOfAnotherVersionStartsOver() async throws {
        let directory = try Lie.Directory()
        let server = try Lie.Server { request, _ in
            let current = Lie.body(2)
            if Lie.header("Range", in: request) != nil {
                return Lie.answer("206 Partial Content", "ETag: \"v2\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: current.suffix(from: 1999))
            }
            return Lie.answer("200 OK", "ETag: \"v2\"\r\n", body: current)
        }
        defer { server.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        let api = try Lie.api()
        let file = try await api.download(route: .get(server.url + "/file"), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(2))
        #expect(file.resumedBytes == 0)
        #expect(file.response.statusCode == 200)
        #expect(server.header("Range") == ["bytes=1999-", nil])
        #expect(server.header("If-Range") == [#""v1""#, nil])
        #expect(directory.files == ["file.bin"])
    }

    /// A 206 whose `Content-Range` starts where asked and names the file's length, but whose body
    /// says otherwise: longer (another, longer version's tail) or shorter. The file would not be
    /// the server's: the promise fails, and nothing is delivered.
    @Test(arguments: [("longer", 1500), ("shorter", 500)])
    func aRangeWhoseBodyIsNotItsLengthIsNotDelivered(_ kind: String, bodyLength: Int) async throws {
        let directory = try Lie.Directory()
        let tail = Data(Lie.body(1, bytes: 5000).dropFirst(1999).prefix(bodyLength))
        let server = try Lie.Server { request, _ in
            if Lie.header("Range", in: request) != nil {
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: tail)
            }
            return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: Lie.body(1))
        }
        defer { server.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        let api = try Lie.api()
        let error = await apiError(of: api.download(route: .get(server.url + "/file"), to: directory.destination, resumingFrom: resume))
        #expect(error?.caseName == "transportFailed", "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: directory.destination.path))
        #expect(server.header("Range") == ["bytes=1999-"])
    }

    /// A resume answered by a redirect on the same origin: the next leg asks for the same range
    /// under the same validator, and the file is completed from it.
    @Test func aResumeRedirectedOnItsOriginAsksForTheSameRange() async throws {
        let directory = try Lie.Directory()
        let server = try Lie.Server { request, _ in
            guard request.hasPrefix("GET /moved ") else { return Lie.answer("302 Found", "Location: /moved\r\n") }
            if Lie.header("Range", in: request) == "bytes=1999-", Lie.header("If-Range", in: request) == #""v1""# {
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: Lie.body(1).suffix(from: 1999))
            }
            return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: Lie.body(1))
        }
        defer { server.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        let api = try Lie.api()
        let file = try await api.download(route: .get(server.url + "/file"), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(1))
        #expect(file.resumedBytes == 1999)
        #expect(server.header("Range") == ["bytes=1999-", "bytes=1999-"])
        #expect(server.header("If-Range") == [#""v1""#, #""v1""#])
        #expect(directory.files == ["file.bin"])
    }

    /// A resume sent with credentials and redirected to another origin: the range and its
    /// validator go along (they say nothing secret), the credentials do not; the other origin's
    /// file, a different version, is delivered whole.
    @Test(arguments: [false, true]) func aResumeRedirectedToAnotherOriginLeavesItsCredentials(otherVersionMatches: Bool) async throws {
        let directory = try Lie.Directory()
        let other = try Lie.Server { request, _ in
            let tag = otherVersionMatches ? "v1" : "v2"
            let body = Lie.body(otherVersionMatches ? 1 : 2)
            if Lie.header("Range", in: request) == "bytes=1999-", Lie.header("If-Range", in: request) == "\"\(tag)\"" {
                return Lie.answer("206 Partial Content", "ETag: \"\(tag)\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: body.suffix(from: 1999))
            }
            return Lie.answer("200 OK", "ETag: \"\(tag)\"\r\n", body: body)
        }
        defer { other.stop() }
        let first = try Lie.Server { _, _ in Lie.answer("302 Found", "Location: \(other.url)/elsewhere\r\n") }
        defer { first.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: first.url + "/file")
        let api = try Lie.api()
        let file = try await api.download(route: .get(first.url + "/file"), parameters: Lie.Headers(values: ["Authorization": "Bearer secret"]),
                                          to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(otherVersionMatches ? 1 : 2))
        #expect(file.resumedBytes == (otherVersionMatches ? 1999 : 0))
        #expect(first.header("Authorization") == ["Bearer secret"])
        #expect(other.header("Authorization").allSatisfy { $0 == nil })
        #expect(other.header("Range").first == "bytes=1999-")
        #expect(other.header("If-Range").first == #""v1""#)
        #expect(directory.files == ["file.bin"])
    }

    /// The partial file became a directory (with a file in it) while the resume was on its way:
    /// the promise fails typed, nothing is delivered, and the directory keeps what it holds.
    @Test func aPartialFileThatBecameADirectoryFailsTyped() async throws {
        let directory = try Lie.Directory()
        let swapped = Lie.Shared<URL?>(nil)
        let server = try Lie.Server { request, _ in
            if Lie.header("Range", in: request) != nil, let partial = swapped.value {
                try? FileManager.default.removeItem(at: partial)
                try? FileManager.default.createDirectory(at: partial, withIntermediateDirectories: false)
                try? Data("keep".utf8).write(to: partial.appendingPathComponent("keep.txt"))
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: Lie.body(1).suffix(from: 1999))
            }
            return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: Lie.body(1))
        }
        defer { server.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        swapped.value = resume.partialFile
        let api = try Lie.api()
        let error = await apiError(of: api.download(route: .get(server.url + "/file"), to: directory.destination, resumingFrom: resume))
        guard case .fileFailed(let failure)? = error else {
            Issue.record("expected fileFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .writeFailed)
        #expect(!FileManager.default.fileExists(atPath: directory.destination.path))
        #expect(FileManager.default.contents(atPath: resume.partialFile.appendingPathComponent("keep.txt").path) == Data("keep".utf8))
        // What is left cannot be taken for a resume: the bytes are not a file.
        #expect(ResumableDownload.pending(for: directory.destination) == nil)
    }

    /// A retry whose attempt is cut again and again, each time by a server that then changes
    /// version under the same `ETag` at the byte held: every overlap that differs starts over,
    /// and the file delivered is the last version, whole.
    @Test func aFileChangingAtTheHeldByteOnEveryRetryIsDeliveredWhole() async throws {
        let directory = try Lie.Directory()
        // Version n's bytes: the base pattern, every byte offset by n.
        @Sendable func version(_ n: Int) -> Data { Data(Lie.body(1).map { $0 &+ UInt8(n) }) }
        let cut = Lie.Shared(Set<Int>())
        let server = try Lie.Server(closesAfter: { cut.value.contains($0) }) { request, index in
            let current = version(index)
            if let range = Lie.header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()) {
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes \(start)-2999/3000\r\n", body: current.suffix(from: start))
            }
            // Cut after 1000 bytes the first three times.
            if index < 4 {
                cut.update { _ = $0.insert(index) }
                return Array(Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: current).dropLast(2000))
            }
            return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: current)
        }
        defer { server.stop() }
        let api = try Lie.api(retryPolicy: RetryPolicy(maxRetries: 5, baseDelay: 0.01, jitter: false))
        let file = try await api.download(route: .get(server.url + "/file"), to: directory.destination).value
        let delivered = try Data(contentsOf: directory.destination)
        #expect(file.response.statusCode == 200 || file.response.statusCode == 206)
        // Whatever the path, the file is one version, whole.
        #expect((1...10).contains { delivered == version($0) }, "a file of mixed versions was delivered")
        #expect(directory.files == ["file.bin"])
    }
}

extension ResumeLieAttackTests {
    /// Signs with "Bearer t<n>" and refreshes by counting up.
    typealias Tokens = EventSourceTests.CountingTokens

    /// A resume refused with a 401 (its error body in memory, not in the file) until the
    /// delegate refreshes: sent again with the new token, it asks for the same range, and the
    /// file is completed from it.
    @Test func aResumeRefusedUntilRefreshedGoesOnFromItsBytes() async throws {
        let directory = try Lie.Directory()
        let server = try Lie.Server { request, _ in
            if Lie.header("Authorization", in: request) == "Bearer t1" {
                return Lie.answer("401 Unauthorized", "ETag: \"v9\"\r\n", body: Data("expired".utf8))
            }
            if Lie.header("Range", in: request) == "bytes=1999-", Lie.header("If-Range", in: request) == #""v1""# {
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes 1999-2999/3000\r\n", body: Lie.body(1).suffix(from: 1999))
            }
            return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: Lie.body(1))
        }
        defer { server.stop() }
        let resume = try directory.resume(of: Lie.body(1), offset: 2000, from: server.url + "/file")
        let tokens = Tokens()
        let api = try Lie.api()
        api.delegate = tokens
        let file = try await api.download(route: .get(server.url + "/file"), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(1))
        #expect(file.resumedBytes == 1999)
        #expect(server.header("Authorization") == ["Bearer t1", "Bearer t2"])
        #expect(server.header("Range") == ["bytes=1999-", "bytes=1999-"])
        #expect(directory.files == ["file.bin"])
        withExtendedLifetime(tokens) {}
    }
}

extension ResumeLieAttackTests {
    /// The partial file deleted under a download (by a cleaner, or by hand) while its body
    /// still comes: the download fails at the move, typed, and delivers nothing; it delivered
    /// an empty file as complete before.
    @Test func aPartialFileDeletedUnderTheDownloadFailsItsMove() async throws {
        let directory = try Lie.Directory()
        let deleted = DispatchSemaphore(value: 0)
        let body = Lie.body(1, bytes: 300_000)
        let raw = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let answer = Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: body)
            let split = answer.count - 200_000
            guard connection.send(Array(answer[..<split])) else { return }
            _ = deleted.wait(timeout: .now() + 30)
            _ = connection.send(Array(answer[split...]))
        }
        defer { raw.stop() }
        let api = try Lie.api()
        let promise = api.download(route: .get(raw.baseURL + "/file"), to: directory.destination)
        let partial: @Sendable () -> URL? = {
            directory.files.first { $0.hasSuffix(".tern-partial") }.map { directory.url.appendingPathComponent($0) }
        }
        // Its bytes so far written (a mebibyte is gathered before a write, and the end flushes).
        #expect(await eventually { partial() != nil })
        try FileManager.default.removeItem(at: try #require(partial()))
        deleted.signal()
        let error = await apiError(of: promise)
        #expect(error?.caseName == "fileFailed")
        #expect(!FileManager.default.fileExists(atPath: directory.destination.path))
    }

    /// Makes `directory` immutable or not with chattr(1): nothing in it can be created, renamed
    /// or deleted, even by root (the tests run as root, whom a read-only mode does not stop).
    /// Returns whether it could.
    static func setImmutable(_ directory: URL, _ immutable: Bool) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [immutable ? "+i" : "-i", directory.path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// The destination's directory becomes unwritable between a cut attempt and its resume: the
    /// resume's 206 is written into the partial file, but the file cannot be moved into place,
    /// and the promise fails typed with nothing delivered. Once the directory is writable again,
    /// what was kept resumes to the whole file and leaves nothing beside it.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chattr")))
    func aDirectoryMadeUnwritableBeforeTheResumeFailsTypedAndResumesLater() async throws {
        let directory = try Lie.Directory()
        let server = try Lie.Server(closesAfter: { $0 == 1 }) { request, index in
            if let range = Lie.header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()) {
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes \(start)-2999/3000\r\n", body: Lie.body(1).suffix(from: start))
            }
            let whole = Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: Lie.body(1))
            return index == 1 ? Array(whole.dropLast(1000)) : whole
        }
        defer { server.stop() }
        let api = try Lie.api()
        let url = server.url + "/file"
        #expect(await apiError(of: api.download(route: .get(url), to: directory.destination))?.caseName == "transportFailed")
        let kept = try #require(ResumableDownload.pending(for: directory.destination))
        // Without chattr(1), or on a file system without the attribute (tmpfs), nothing to test.
        guard Self.setImmutable(directory.url, true) else { return }
        defer { _ = Self.setImmutable(directory.url, false) }
        let error = await apiError(of: api.download(route: .get(url), to: directory.destination, resumingFrom: kept))
        guard case .fileFailed(let failure)? = error else {
            Issue.record("expected fileFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .moveFailed)
        #expect(!FileManager.default.fileExists(atPath: directory.destination.path))
        #expect(Self.setImmutable(directory.url, false))
        let resume = ResumableDownload.pending(for: directory.destination)
        let file = try await api.download(route: .get(url), to: directory.destination, resumingFrom: resume).value
        #expect(try Data(contentsOf: directory.destination) == Lie.body(1))
        #expect(file.response.statusCode == 206 || file.response.statusCode == 200)
        #expect(directory.files == ["file.bin"])
    }
}

extension ResumeLieAttackTests {
    /// The partial file swapped for a link to a file elsewhere while the body still comes: the
    /// download goes on writing the file it opened, and fails at the move, typed; it moved the
    /// link into place before, so that the destination named the other file, and whatever the
    /// app then wrote to its download went there.
    @Test func aPartialFileSwappedForALinkMidBodyIsNotDelivered() async throws {
        let directory = try Lie.Directory()
        let outside = try Lie.Directory()
        let victim = outside.url.appendingPathComponent("victim.bin")
        try Data("not the download".utf8).write(to: victim)
        let swapped = DispatchSemaphore(value: 0)
        let body = Lie.body(1, bytes: 300_000)
        let raw = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let answer = Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: body)
            let split = answer.count - 200_000
            guard connection.send(Array(answer[..<split])) else { return }
            _ = swapped.wait(timeout: .now() + 30)
            _ = connection.send(Array(answer[split...]))
        }
        defer { raw.stop() }
        let api = try Lie.api()
        let promise = api.download(route: .get(raw.baseURL + "/file"), to: directory.destination)
        let partial: @Sendable () -> URL? = {
            directory.files.first { $0.hasSuffix(".tern-partial") }.map { directory.url.appendingPathComponent($0) }
        }
        #expect(await eventually { partial() != nil })
        let name = try #require(partial())
        try FileManager.default.removeItem(at: name)
        try FileManager.default.createSymbolicLink(at: name, withDestinationURL: victim)
        swapped.signal()
        let error = await apiError(of: promise)
        #expect(error?.caseName == "fileFailed")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory.destination.path)) == nil)
        #expect(try Data(contentsOf: victim) == Data("not the download".utf8))
    }
}
