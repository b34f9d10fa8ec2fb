// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A large file uploaded through a recording (256 MiB, a video a test posts), measured in a
/// child process of its own as ``RecordingMemoryTests`` measures a large download recorded.
///
/// UploadsAndDownloads.md promises that "a body goes out from memory, from a file, or from a
/// stream, and only memory holds it whole", a file "streamed from disk as it is sent"; and
/// RecordingAndReplaying.md that everything above the transport is the real pipeline and that
/// "a body over 64 KiB is kept as its SHA-256 and length" (the file keeps 64 bytes of digest).
/// ``RecordingMemoryTests`` holds a recorded download to 160 MiB of growth whatever its size.
/// The recorder read the whole file into memory first (`Data(contentsOf:)` for a file body,
/// every byte of a stream body) to digest it, and held it while the upload was sent: the process
/// grew by the upload's size, 256 MiB here. It now reads a piece at a time (``SentBody``).
@Suite(.onTestThreads, .exitTest)
struct RecordingUploadMemoryAttackTests {
    static let allowedGrowth = 160 << 20

    @Test func recordingALargeUploadKeepsMemoryBounded() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let folder = try newFolder("attack87b-upload-")
                defer { try? FileManager.default.removeItem(at: folder) }
                let upload = folder.appendingPathComponent("video.mp4")
                _ = FileManager.default.createFile(atPath: upload.path, contents: nil)
                let handle = try FileHandle(forWritingTo: upload)
                try handle.truncate(atOffset: 256 << 20)   // sparse: no disk, 256 MiB read
                try handle.close()
                let server = try LoopbackServer(keepingBodiesUpTo: 0) { request in .json(#"{"stored": \#(request.bodyLength)}"#) }
                defer { server.stop() }
                let before = try residentBytes("VmRSS")
                let recorder = try RecordingTransport(file: folder.appendingPathComponent("upload.har"), mode: .record)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300, retryPolicy: .never), transport: recorder, responseQueue: .global())
                let result = await (api.request(route: .put(server.baseURL + "/videos/1"),
                                                parameters: BodyParameters(upload, contentType: "video/mp4")) as Promise<Data>).result
                let grown = try residentBytes("VmHWM") - before
                guard case .success(let answer) = result, String(decoding: answer, as: UTF8.self).contains("\(256 << 20)") else {
                    print("peak resident memory grew \(grown >> 20) MiB; the upload: \(result)")
                    exit(EXIT_FAILURE)
                }
                print(grown)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }
}
#endif
