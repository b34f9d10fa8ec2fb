import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineFixtures
import Tern

// Long runs against the server at `TERN_BENCH_URL` (nginx: `Benchmarks/nginx/soak` starts it
// and runs each many times), over one transport:
//
//     Soak curl|urlsession storm-get [requests]      5,000 GETs in waves, each wave cancelled
//     Soak curl|urlsession storm-upload [uploads]    1,500 multipart uploads in waves, cancelled
//     Soak curl|urlsession rss [requests]            100,000 GETs, resident memory as they go
//
// A storm exits 0 when every promise settled exactly once, as sent or cancelled, and no file
// descriptor or temporary file was left behind; a crash is the process dying.

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, let base = ProcessInfo.processInfo.environment["TERN_BENCH_URL"] else {
    print("usage: TERN_BENCH_URL=<server> Soak curl|urlsession storm-get|storm-upload|rss [count]")
    exit(2)
}
let transport: any Transport = arguments[0] == "curl" ? try CurlTransport() : URLSessionTransport()
let mode = arguments[1]
let api = ItemsAPI(baseURL: base, transport: transport, responseQueue: .global())

/// The open file descriptors of this process.
func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The resident memory of this process now, in KiB.
func residentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return -1 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// Tern's temporary upload files in the temporary directory.
func temporaryUploads() -> Set<String> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []).filter { $0.hasPrefix("tern-upload-") })
}

/// Starts `count` requests in waves of `wave`, cancels each wave after 0 to 4 ms, and waits for
/// every one; returns how many were sent and how many cancelled, and fails on anything else.
func storm(_ count: Int, wave: Int, _ start: () -> Promise<Void>) async throws -> [String: Int] {
    var outcomes: [String: Int] = [:]
    for index in 0..<(count / wave) {
        let promises = (0..<wave).map { _ in start() }
        // Cancelled at once, or a few milliseconds in, when some have been answered.
        if index % 5 != 0 { try await Task.sleep(nanoseconds: UInt64(index % 5) * 4_000_000) }
        promises.forEach { $0.cancel() }
        for promise in promises {
            switch await promise.result {
            case .success: outcomes["sent", default: 0] += 1
            case .failure(let error as APIError) where error.isCancellation: outcomes["cancelled", default: 0] += 1
            case .failure(let error): outcomes["\(error)", default: 0] += 1
            }
        }
    }
    return outcomes
}

switch mode {
case "storm-get", "storm-upload":
    let count = arguments.count > 2 ? Int(arguments[2]) ?? 0 : (mode == "storm-get" ? 5000 : 1500)
    let part = FileManager.default.temporaryDirectory.appendingPathComponent("soak-part-\(ProcessInfo.processInfo.processIdentifier)")
    try Data(repeating: 7, count: 64 << 10).write(to: part)
    defer { try? FileManager.default.removeItem(at: part) }
    // Warm up first: connections and threads that stay open for the process are not a leak.
    _ = try await storm(20, wave: 10) { api.request(route: .get("/items")) }
    try await Task.sleep(nanoseconds: 500_000_000)
    let descriptors = openDescriptors()
    let uploads = temporaryUploads()
    let outcomes = try await storm(count, wave: mode == "storm-get" ? 100 : 50) {
        if mode == "storm-get" { return api.request(route: .get("/items")) }
        return api.request(route: .post("/upload"), parameters: MultipartParameters(parts: [Part(name: "file", fileURL: part)]))
    }
    // Let connections the cancels closed be closed, and idle ones expire.
    try await Task.sleep(nanoseconds: 1_000_000_000)
    let leftDescriptors = openDescriptors() - descriptors
    let leftUploads = temporaryUploads().subtracting(uploads)
    let settled = outcomes.values.reduce(0, +)
    print("\(arguments[0]) \(mode): \(outcomes), settled \(settled) of \(count), descriptors +\(leftDescriptors), temporary files left \(leftUploads.count)")
    // Idle connections kept for reuse (CurlTransport keeps up to 32) are not a leak; more are.
    let ok = settled == count && Set(outcomes.keys).isSubset(of: ["sent", "cancelled"]) && leftDescriptors <= 40 && leftUploads.isEmpty
    exit(ok ? 0 : 1)
case "rss":
    let count = arguments.count > 2 ? Int(arguments[2]) ?? 100_000 : 100_000
    let step = count / 10
    try await EndToEnd.inFlight(8, 2_000) { try await EndToEnd.tern(api) }   // warm-up
    let start = residentKiB()
    var readings: [Int] = []
    for _ in 0..<10 {
        try await EndToEnd.inFlight(8, step) { try await EndToEnd.tern(api) }
        readings.append(residentKiB())
    }
    let growth = Double(readings.last! - readings.first!) / Double(count - step) * 1000
    print("\(arguments[0]) rss: \(start) KiB after warm-up, then \(readings.map(String.init).joined(separator: " ")) KiB every \(step) requests: \(String(format: "%+.1f", growth)) KiB per 1,000 requests")
default:
    print("unknown mode \(mode)")
    exit(2)
}
