#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download whose destination is a link into another directory: the file the link names,
/// the user's, is never written, whether the download replaces the destination or not, and
/// a link naming nothing yet creates nothing where it points.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DownloadDestinationLinkTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-link-\(UUID().uuidString)")

    func download(to destination: URL, replacing: Bool) async throws -> Result<DownloadedFile, any Error> {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { guard connection.send(RawServer.Connection.response("downloaded")) else { return } }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        return await api.download(route: .get(server.baseURL + "/file"), to: destination, replacing: replacing).result.mapError { $0 }
    }

    @Test(arguments: [true, false]) func theFileALinkNamesIsNeverWritten(replacing: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (mine, theirs) = (root.appendingPathComponent("downloads"), root.appendingPathComponent("elsewhere"))
        for directory in [mine, theirs] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        let users = theirs.appendingPathComponent("notes.txt")
        try Data("the user's".utf8).write(to: users)
        let destination = mine.appendingPathComponent("file")
        try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: users)
        let result = try await download(to: destination, replacing: replacing)
        #expect(try String(contentsOf: users, encoding: .utf8) == "the user's")
        if replacing {
            #expect((try? result.get()) != nil, "\(result)")
            // The link was replaced by the downloaded file.
            var status = stat()
            #expect(lstat(destination.path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG)
            #expect(try String(contentsOf: destination, encoding: .utf8) == "downloaded")
        } else {
            #expect((try? result.get()) == nil)
        }
    }

    @Test func aLinkNamingNothingCreatesNothingWhereItPoints() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (mine, theirs) = (root.appendingPathComponent("downloads"), root.appendingPathComponent("elsewhere"))
        for directory in [mine, theirs] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        let target = theirs.appendingPathComponent("planted")
        let destination = mine.appendingPathComponent("file")
        try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: target)
        _ = try await download(to: destination, replacing: false)
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: theirs.path).isEmpty)
    }
}
