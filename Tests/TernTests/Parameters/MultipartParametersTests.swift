import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads) struct MultipartParametersTests {
    private func encode(_ parameters: MultipartParameters) throws -> (body: RequestBody, contentType: String) {
        var draft = RequestDraft(method: .post, url: URL(string: "https://x.io/")!)
        try parameters.encode(into: &draft)
        return (draft.body, draft.headers["Content-Type"] ?? "")
    }

    @Test func anInMemoryBodyIsLaidOutByRFC7578() throws {
        let (body, contentType) = try encode(MultipartParameters(parts: [
            Part(name: "caption", value: "front"),
            Part(name: "a\"b", data: Data([1, 2, 3]), filename: "x\r\n.bin", mimeType: "application/octet-stream", headers: ["X-Part": "1"]),
        ]))
        let boundary = try #require(contentType.components(separatedBy: "boundary=").last)
        #expect(contentType == "multipart/form-data; boundary=\(boundary)")
        var expected = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nfront\r\n".utf8)
        expected.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"a%22b\"; filename=\"x%0D%0A.bin\"\r\n".utf8))
        expected.append(Data("Content-Type: application/octet-stream\r\nX-Part: 1\r\n\r\n".utf8))
        expected.append(Data([1, 2, 3]))
        expected.append(Data("\r\n--\(boundary)--\r\n".utf8))
        #expect(body == .data(expected))
    }

    @Test func eachRequestGetsItsOwnBoundary() throws {
        let parameters = MultipartParameters(parts: [Part(name: "a", value: "b")])
        let boundaries = try (0..<20).map { _ in try encode(parameters).contentType }
        #expect(Set(boundaries).count == 20)
    }

    /// On Linux a body with file parts is a stream of its pieces, whose length is announced; on
    /// Apple platforms, a temporary file that URLSession uploads with its length.
    @Test func filePartsKeepTheLayoutAndTheirLengthIsKnown() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-part-\(UUID().uuidString).txt")
        let contents = patterned(bytes: 200_000, seed: 3)
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (body, contentType) = try encode(MultipartParameters(parts: [Part(name: "doc", fileURL: file, mimeType: "application/octet-stream")]))
        let boundary = try #require(contentType.components(separatedBy: "boundary=").last)
        var expected = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"\(file.lastPathComponent)\"\r\n".utf8)
        expected.append(Data("Content-Type: application/octet-stream\r\n\r\n".utf8))
        expected.append(contents)
        expected.append(Data("\r\n--\(boundary)--\r\n".utf8))
        switch body {
        case .stream(let stream):
            #expect(stream.length == Int64(expected.count))
            // Read in odd sizes, across the pieces' edges; and again, as a retry would.
            #expect(try readAll(stream.makeStream(), step: 1000) == expected)
            #expect(try readAll(stream.makeStream(), step: 65_537) == expected)
        case .file(let url, isTemporary: true):
            defer { try? FileManager.default.removeItem(at: url) }
            #expect(try Data(contentsOf: url) == expected)
        default:
            Issue.record("expected a stream or a temporary file, got \(body)")
        }
    }

    @Test func aFileThatShrankFailsTheStream() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-part-\(UUID().uuidString).txt")
        try Data(count: 5000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stream = SegmentStream([.data(Data("head".utf8)), .file(file, length: 5000)])
        try Data(count: 10).write(to: file)
        #expect(throws: BodyLengthMismatch(statedLength: 5004, actualLength: 14)) { try readAll(stream, step: 4096) }
    }

    @Test func aStreamPieceIsHeldToItsLength() throws {
        let short = SegmentStream([.data(Data("head".utf8)), .stream(BodyStream(length: 20) { InputStream(data: Data(count: 10)) }, length: 20)])
        #expect(throws: BodyLengthMismatch(statedLength: 24, actualLength: 14)) { try readAll(short, step: 4096) }
        let long = SegmentStream([.stream(BodyStream(length: 20) { InputStream(data: Data(count: 30)) }, length: 20), .data(Data("tail".utf8))])
        #expect(throws: BodyLengthMismatch(statedLength: 24, actualLength: 25)) { try readAll(long, step: 4096) }
        let exact = SegmentStream([.stream(BodyStream(length: 20) { InputStream(data: Data(count: 20)) }, length: 20), .data(Data("tail".utf8))])
        #expect(try readAll(exact, step: 7) == Data(count: 20) + Data("tail".utf8))
    }

    /// A file piece that holds more than its stated length when it is sent (it grew) fails the
    /// body, as a stream does, one that holds less too; one of its length goes as it is.
    @Test func aFilePieceIsHeldToItsLength() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-piece-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(count: 30).write(to: file)
        let grew = SegmentStream([.file(file, length: 20), .data(Data("tail".utf8))])
        #expect(throws: BodyLengthMismatch(statedLength: 24, actualLength: 25)) { try readAll(grew, step: 7) }
        let grewFromNothing = SegmentStream([.data(Data("head".utf8)), .file(file, length: 0)])
        #expect(throws: BodyLengthMismatch(statedLength: 4, actualLength: 5)) { try readAll(grewFromNothing, step: 4096) }
        let shrank = SegmentStream([.file(file, length: 40)])
        #expect(throws: BodyLengthMismatch(statedLength: 40, actualLength: 30)) { try readAll(shrank, step: 4096) }
        let exact = SegmentStream([.data(Data("head".utf8)), .file(file, length: 30)])
        #expect(try readAll(exact, step: 7) == Data("head".utf8) + Data(count: 30))
    }

    /// Everything `stream` gives, read `step` bytes at a time; throws its error.
    private func readAll(_ stream: InputStream, step: Int) throws -> Data {
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: step)
        while true {
            let count = stream.read(&buffer, maxLength: step)
            if count < 0 { throw stream.streamError ?? TestError() }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    @Test(arguments: [("PNG", MIMEType.png), ("jpeg", .jpeg), ("json", .json), ("gz", "application/gzip"), ("tgz", "application/gzip"), ("unknown", .octetStream), ("", .octetStream)])
    func mimeTypesAreInferredFromTheExtension(fileExtension: String, expected: MIMEType) {
        #expect(MIMEType(fileExtension: fileExtension) == expected)
    }
}
