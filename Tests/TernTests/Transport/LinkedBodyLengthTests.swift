import Foundation
import Testing
@testable import TernTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Upload progress counts up to the body's length: for a file body given as a link (accepted,
/// and read through by the transports) the file's, not the link's own few bytes, which made a
/// 20 MB upload report a total of 40 and fractions far above 1.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LinkedBodyLengthTests {
    @Test func aLinkedFileCountsTheFileItLeadsTo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-linked-body-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("video.bin"), link = directory.appendingPathComponent("latest")
        try Data(count: 5000).write(to: file)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let request = TransportRequest(urlRequest: URLRequest(url: URL(string: "http://127.0.0.1:1/upload")!), body: .file(link))
        #expect(request.bodyLength == 5000)
    }
}
