import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a failed upload says when a multipart part's file grew after the body was made.
@Suite(.onTestThreads, .timeLimit(.minutes(3))) struct UploadFileChangeBreakTests {
    /// A part's file grown while its upload waited for a connection: the upload fails, and says
    /// what a file body says when its file grew, that the body ran past its stated length. It
    /// says instead that the body "ended after" fewer bytes than stated, as if the file had
    /// been cut short.
    @Test func aPartsFileThatGrewIsReportedAsRunningLongNotAsEndingShort() async throws {
        let gate = DispatchSemaphore(value: 0)
        let held = Recorder<Int>()
        let server = try LoopbackServer { request in
            held.append(request.bodyLength)
            gate.wait()
            return .text("ok")
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-grown-part-\(UUID())")
        try Data(repeating: 1, count: 1000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        // A timeout far off: on a loaded machine the uploads that wait for a connection timed out
        // before the file grew, and none could say it ran long.
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 90, retryPolicy: .never))
        let parameters = MultipartParameters(parts: [Part(name: "f", fileURL: file)])
        let uploads = (0..<16).map { _ in api.request(route: .post(server.baseURL + "/up"), parameters: parameters) as Promise<String> }
        #expect(await eventually { held.items.count >= 4 })
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 2, count: 1000))
        try handle.close()
        for _ in 0..<16 { gate.signal() }
        var mismatches: [BodyLengthMismatch] = [], others: [String] = []
        for upload in uploads {
            let error = await apiError(of: upload)
            if case .transportFailed(let failure)? = error, let mismatch = failure.underlying as? BodyLengthMismatch {
                mismatches.append(mismatch)
            } else {
                others.append(error.map { "\($0)" } ?? "answered")
            }
        }
        #expect(!mismatches.isEmpty, "no upload said its body ran long: \(others)")
        for mismatch in mismatches {
            #expect(mismatch.actualLength > mismatch.statedLength, "\(mismatch)")
        }
    }
}
