import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download with a size limit whose answer is a status the request's validation accepts
/// though it is no 2xx (`Validation.acceptAll`, `.statusCodes(200..<500)`: an app that saves
/// whatever the server sends, its error pages too). Such a body is read into memory, under the
/// API's `maximumResponseSize` (64 MiB by default), not the file's limit, and then written to
/// the destination as the file (`DownloadFile.deliver`). `download(route:to:maximumSize:)`:
/// "The largest file accepted. A larger one, announced or as it arrives, stops the transfer and
/// fails with ``APIError/responseTooLarge(_:)``, leaving nothing on disk". A 1,000-byte limit
/// delivers a 200,000-byte file.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AcceptedErrorSizeAttackTests {
    typealias Lie = ResumeLie

    @Test(arguments: [true, false]) func anAcceptedErrorBodyLargerThanTheLimitIsNoFile(announced: Bool) async throws {
        let directory = try Lie.Directory()
        let page = Data(repeating: 0x41, count: 200_000)
        let server = try Lie.Server(closesAfter: { _ in !announced }) { _, _ in
            announced ? Lie.answer("404 Not Found", body: page)
                : Array("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n".utf8) + [UInt8](page)
        }
        defer { server.stop() }
        let api = try Lie.api()
        let result = await Lie.result(of: api.download(route: .get(server.url + "/report.pdf"), to: directory.destination, maximumSize: 1000,
                                                       options: RequestOptions(validation: .acceptAll)))
        switch result {
        case .success(let file):
            let size = (try? Data(contentsOf: file.fileURL))?.count ?? -1
            Issue.record("a download limited to 1,000 bytes delivered a file of \(size) bytes (status \(file.response.statusCode))")
        case .failure(let error):
            guard case APIError.responseTooLarge = error else { Issue.record("\(error)"); return }
        }
        #expect(directory.files.isEmpty, "\(directory.files)")
    }
}
