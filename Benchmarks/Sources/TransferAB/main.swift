import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

// One large transfer, by Tern or by raw URLSession, against the server at `TERN_BENCH_URL`
// (nginx: `Benchmarks/nginx/bench` runs both sides in turns and prints the ratios). Prints the
// throughput and the process's peak resident memory, which must not grow with the size. One
// side per process, so that each peak is its own.
//
//     TERN_BENCH_URL=http://127.0.0.1:8089 .build/release/TransferAB download|upload tern|raw <MiB>

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 3, let mebibytes = Int(arguments[2]),
      let base = ProcessInfo.processInfo.environment["TERN_BENCH_URL"] else {
    print("usage: TERN_BENCH_URL=<server> TransferAB download|upload tern|raw <MiB>")
    exit(2)
}
let direction = arguments[0], side = arguments[1]
let size = Int64(mebibytes) << 20
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tern-transfer-\(ProcessInfo.processInfo.processIdentifier)")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }

final class TransferAPI: AbstractAPI, @unchecked Sendable {
    init(baseURL: String) {
        super.init(configuration: APIConfiguration(baseURL: baseURL, timeout: .infinity, retryPolicy: .never), responseQueue: .global())
    }
}

/// The peak resident memory of this process so far, in MiB.
func peakResidentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return .nan }
    return kib / 1024
}

/// Runs the raw URLSession side with a completion handler, as a user would.
func raw(_ start: (URLSession, @escaping @Sendable ((any Error)?) -> Void) -> URLSessionTask) async throws {
    let session = URLSession(configuration: .default)
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        start(session) { error in
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }.resume()
    }
}

let api = TransferAPI(baseURL: base)
let destination = scratch.appendingPathComponent("downloaded")
let upload = scratch.appendingPathComponent("upload")
if direction == "upload" {
    // Sparse: no disk to make, zeros to read.
    guard FileManager.default.createFile(atPath: upload.path, contents: nil) else { exit(1) }
    let handle = try FileHandle(forWritingTo: upload)
    try handle.truncate(atOffset: UInt64(size))
    try handle.close()
}

let start = DispatchTime.now().uptimeNanoseconds
switch (direction, side) {
case ("download", "tern"):
    let file = try await api.download(route: .get("/blob/\(mebibytes)"), to: destination).value
    precondition(fileSize(file.fileURL) == size, "short download")
case ("download", "raw"):
    try await raw { session, done in
        session.downloadTask(with: URL(string: base + "/blob/\(mebibytes)")!) { location, _, error in
            if let location { try? FileManager.default.moveItem(at: location, to: destination) }
            done(error)
        }
    }
    precondition(fileSize(destination) == size, "short download")
case ("upload", "tern"):
    try await (api.request(route: .post("/upload"), parameters: BodyParameters(upload)) as Promise<Void>).value
case ("upload", "raw"):
    try await raw { session, done in
        var request = URLRequest(url: URL(string: base + "/upload")!)
        request.httpMethod = "POST"
        return session.uploadTask(with: request, fromFile: upload) { _, _, error in done(error) }
    }
default:
    print("unknown direction or side")
    exit(2)
}
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
print(String(format: "%@ %@ %d MiB: %.1f MiB/s, peak RSS %.1f MiB", direction, side, mebibytes,
             Double(mebibytes) / seconds, peakResidentMiB()))

func fileSize(_ url: URL) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? -1
}
