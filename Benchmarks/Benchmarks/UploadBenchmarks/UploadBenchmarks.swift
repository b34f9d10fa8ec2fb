import Benchmark
import Tern
import TernTesting
import Foundation

// Multipart uploads of a file: peak resident memory must not grow with the file's size.
// Compare the peak of the 1 GiB upload with that of the 1 MiB one; this target runs in a
// process of its own so that no other benchmark's memory blurs the figure.

final class UploadAPI: AbstractAPI, @unchecked Sendable {
    init(baseURL: String) {
        super.init(configuration: APIConfiguration(baseURL: baseURL, timeout: 600), responseQueue: .global())
    }
    func upload(_ file: URL) -> Promise<Data> {
        request(route: .post("/upload"), parameters: MultipartParameters(parts: [
            Part(name: "file", fileURL: file), Part(name: "caption", value: "benchmark"),
        ]))
    }
}

/// A sparse file of `size` bytes: it takes no disk space, and reads as zeros.
func sparseFile(_ size: UInt64) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("tern-benchmark-\(size).bin")
    guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
    let handle = try FileHandle(forWritingTo: url)
    try handle.truncate(atOffset: size)
    try handle.close()
    return url
}

let benchmarks: @Sendable () -> Void = {
    // The server counts each body and keeps none of it, so only the client's memory shows.
    let server = try! LoopbackServer(keepingBodiesUpTo: 0) { request in .text("\(request.bodyLength)") }
    let api = UploadAPI(baseURL: server.baseURL)

    for (name, size) in [("1 MiB", UInt64(1) << 20), ("1 GiB", UInt64(1) << 30)] {
        Benchmark(
            "Multipart upload of a \(name) file",
            configuration: .init(metrics: [.peakMemoryResident, .wallClock], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 2)
        ) { benchmark in
            let file = try sparseFile(size)
            defer { try? FileManager.default.removeItem(at: file) }
            benchmark.startMeasurement()
            let received = try await api.upload(file).value
            benchmark.stopMeasurement()
            precondition(Int(String(decoding: received, as: UTF8.self))! > Int(size), "the server got less than the file")
        }
    }
}
