#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
@testable import TernTransport

/// An exchange's upload alone: its body read in the pieces libcurl asks for, taken back to its
/// start for a method that may be sent again, and what is reported sent. Over libcurl, the
/// uploads are `UploadTests`', `ResendingTests`' and `EncodedBodyPathsTests`'.
@Suite(.onTestThreads) struct CurlUploadTests {
    static func request(_ method: String, body: Data?, _ transportBody: TransportBody = .inRequest) -> TransportRequest {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/upload")!)
        request.httpMethod = method
        request.httpBody = body
        return TransportRequest(urlRequest: request, body: transportBody)
    }

    /// Reads `upload` in pieces of `size` into a buffer until it ends or stops.
    static func readAll(_ upload: inout CurlUpload, in size: Int) -> (bytes: [UInt8], last: CurlUpload.Read) {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let read = upload.read(into: buffer)
            guard case .bytes(let count) = read, count > 0 else { return (bytes, read) }
            bytes += buffer.prefix(count)
        }
    }

    @Test func aBodyInMemoryIsReadInPiecesAndEndsWithNoBytes() throws {
        var upload = try CurlUpload(Self.request("POST", body: Data("0123456789".utf8)))
        #expect(upload.hasBody)
        #expect(upload.length == 10)
        let (bytes, last) = Self.readAll(&upload, in: 4)
        #expect(bytes == Array("0123456789".utf8))
        guard case .bytes(0) = last else { Issue.record("ended with \(last)"); return }
        #expect(upload.readBytes == 10)
    }

    @Test func noBodyIsNoneToSend() throws {
        var upload = try CurlUpload(Self.request("GET", body: nil))
        #expect(!upload.hasBody)
        #expect(upload.length == nil)
        guard case .bytes(0) = Self.readAll(&upload, in: 4).last else { Issue.record("a body without bytes"); return }
    }

    /// Only a method that may be sent again is: a POST the server may have acted on is not.
    @Test func anIdempotentMethodsBodyIsReadAgainFromItsStart() throws {
        var put = try CurlUpload(Self.request("PUT", body: Data("abcdef".utf8)))
        _ = Self.readAll(&put, in: 4)
        guard case .done = put.rewind(method: "PUT") else { Issue.record("a PUT not rewound"); return }
        #expect(put.readBytes == 0)
        #expect(Self.readAll(&put, in: 64).bytes == Array("abcdef".utf8))

        var post = try CurlUpload(Self.request("POST", body: Data("abcdef".utf8)))
        _ = Self.readAll(&post, in: 4)
        guard case .cannot = post.rewind(method: "POST") else { Issue.record("a POST rewound"); return }
        #expect(post.readBytes == 6)
    }

    /// Never more than was read (libcurl counts a chunked body's framing), never the same
    /// twice, none once the head came or the body closed.
    @Test func whatIsReportedSentIsWhatWasReadOnce() throws {
        var upload = try CurlUpload(Self.request("POST", body: Data(count: 100)))
        #expect(upload.report(sent: 10, headHasCome: false) == nil)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 60, alignment: 1)
        defer { buffer.deallocate() }
        _ = upload.read(into: buffer)
        #expect(upload.report(sent: 80, headHasCome: false) == 60)
        #expect(upload.report(sent: 60, headHasCome: false) == nil)
        _ = upload.read(into: buffer)
        #expect(upload.report(sent: 100, headHasCome: true) == nil)
        #expect(upload.report(sent: 100, headHasCome: false) == 100)
        upload.close()
        #expect(!upload.hasBody)
        #expect(upload.report(sent: 200, headHasCome: false) == nil)
    }

    /// A body taken back to its start, to be sent again, is reported again from its start: the
    /// bytes of the second send move the attempt as the first's did (the idle timeout watches
    /// them).
    @Test func aBodySentAgainIsReportedAgain() throws {
        var upload = try CurlUpload(Self.request("PUT", body: Data(count: 100)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        defer { buffer.deallocate() }
        _ = upload.read(into: buffer)
        #expect(upload.report(sent: 100, headHasCome: false) == 100)
        guard case .done = upload.rewind(method: "PUT") else { Issue.record("a PUT not rewound"); return }
        #expect(upload.report(sent: 0, headHasCome: false) == nil)
        _ = upload.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<40]))
        #expect(upload.report(sent: 40, headHasCome: false) == 40)
    }

    /// A file is opened by nothing before the request is about to be written; then its pump
    /// reads ahead, and says when it has bytes again.
    @Test func aFileIsReadOnlyOnceStarted() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("curl-upload-\(UUID().uuidString)")
        let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })
        try content.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var upload = try CurlUpload(Self.request("PUT", body: nil, .file(file)))
        #expect(upload.length == 300_000)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        guard case .notStarted = upload.read(into: buffer) else { Issue.record("read before it started"); return }
        let ready = AsyncStream<Void>.makeStream()
        let continuation = ready.continuation
        upload.start { continuation.yield() }
        var iterator = ready.stream.makeAsyncIterator()
        var read: [UInt8] = []
        reading: while true {
            switch upload.read(into: buffer) {
            case .bytes(0): break reading
            case .bytes(let count): read += buffer.prefix(count)
            case .waiting: await iterator.next()
            case .notStarted: Issue.record("not started"); return
            case .failed(let error): Issue.record("failed: \(error)"); return
            }
        }
        #expect(read == Array(content))
        upload.close()
    }
}
#endif
