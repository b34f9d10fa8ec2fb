import Foundation
import Testing
@testable import Tern

@Suite struct MultipartParametersTests {
    private func encode(_ parameters: MultipartParameters) throws -> (body: RequestBody, contentType: String) {
        var draft = RequestDraft(method: .post, url: URL(string: "https://x.io/")!)
        try parameters.encode(into: &draft)
        return (draft.body, draft.headers["Content-Type"] ?? "")
    }

    @Test func anInMemoryBodyIsLaidOutByRFC7578() throws {
        let (body, contentType) = try encode(MultipartParameters(parts: [
            Part(name: "caption", value: "front"),
            Part(name: "a\"b", data: Data([1, 2, 3]), filename: "x\r\n.bin", mimeType: .octetStream, headers: ["X-Part": "1"]),
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

    @Test func filePartsGoThroughATemporaryFileWithTheSameLayout() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-part-\(UUID().uuidString).txt")
        try Data("file contents".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (body, contentType) = try encode(MultipartParameters(parts: [Part(name: "doc", fileURL: file)]))
        guard case .file(let url, isTemporary: true) = body else {
            Issue.record("expected a temporary file, got \(body)")
            return
        }
        defer { try? FileManager.default.removeItem(at: url) }
        let boundary = try #require(contentType.components(separatedBy: "boundary=").last)
        let written = try Data(contentsOf: url)
        let expected = "--\(boundary)\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"\(file.lastPathComponent)\"\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\n\r\nfile contents\r\n--\(boundary)--\r\n"
        #expect(String(decoding: written, as: UTF8.self) == expected)
    }

    @Test(arguments: [("PNG", MIMEType.png), ("jpeg", .jpeg), ("json", .json), ("unknown", .octetStream), ("", .octetStream)])
    func mimeTypesAreInferredFromTheExtension(fileExtension: String, expected: MIMEType) {
        #expect(MIMEType(fileExtension: fileExtension) == expected)
    }
}
