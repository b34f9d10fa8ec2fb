import Foundation
import Testing
@testable import Tern
@testable import TernTransport

/// The multipart body as Apple platforms send it, copied to a temporary file first: a part's
/// file that holds fewer or more bytes when copied than when it was sized (truncated, appended
/// to, another renamed over it) was copied short, or cut at its old length, and framed as whole.
/// It fails the encoding, naming the part. Files the kernel sizes otherwise than it reads them
/// play the change with no race: a `/sys` file says 4096 bytes and holds a few, a `/proc` file
/// says none and holds many.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MultipartTemporaryFileAttackTests {
    @Test(arguments: ["/sys/devices/system/cpu/online", "/proc/self/status"]) func aPartThatIsNotItsSizeFailsTheCopy(path: String) throws {
        let file = URL(fileURLWithPath: path)
        let stated = try regularFileSize(of: file)
        let held = try Data(contentsOf: file).count
        try #require(Int64(held) != stated, "\(path) is read as the size it states: the premise is gone")
        let parameters = MultipartParameters(parts: [Part(name: "kernel", value: "x"), Part(name: "report", fileURL: file)])
        #expect {
            _ = try parameters.writeFile(boundary: "tern-test", stoppingWhen: { false })
        } throws: { error in
            guard case .encodingFailed(let failure) = error as? APIError else { return false }
            return failure.parameter == "report" && failure.underlying is BodyLengthMismatch
        }
    }

    /// A file as long as it says is copied whole.
    @Test func aPartOfItsSizeIsCopiedWhole() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-part-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(repeating: 9, count: 3000).write(to: file)
        let body = try MultipartParameters(parts: [Part(name: "report", fileURL: file)]).writeFile(boundary: "tern-test", stoppingWhen: { false })
        defer { try? FileManager.default.removeItem(at: body) }
        #expect(try Data(contentsOf: body).range(of: Data(repeating: 9, count: 3000)) != nil)
    }
}
