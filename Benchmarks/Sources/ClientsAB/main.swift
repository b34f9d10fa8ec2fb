import AsyncHTTPClient
import CRawCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOSSL
import PipelineFixtures
import Tern

// Clients side by side against one server outside this process (nginx: `Benchmarks/nginx/bench`
// starts it and sets TERN_BENCH_URL): raw URLSession with JSONDecoder (the baseline), Tern over
// URLSession, Tern over libcurl, and AsyncHTTPClient with JSONDecoder; and CurlTransport with no
// pipeline above it, for the pipeline's share. Each side runs a round
// of GET + decode in turn, so all see the same machine; medians, as ratios to URLSession.
// `floor` and `floor, wide` compare Tern decoding with the floor of a decoded request instead:
// libcurl driven from C (CRawCurl), each body handed to JSONDecoder, on the 1 KB array and on
// a page of 10 wide repositories (`/repos`, 52 KB); `floor` runs the transport alone with
// JSONDecoder beside them, the most any client over it can do.
//
// `floor, bytes` compares the body kept as bytes with libcurl from C keeping it too. Each of the
// three then prints issue 27's target for Tern on that payload, and whether this run meets it.
//
// `pipeline` runs Tern's bytes beside the bare transport (and a promise over it), from a task and
// with the task on the transport's executor: the pipeline's share, issue 57's target, with each
// round's ratio to the transport's round beside it.
//
// `floor, clients` runs the clients that can trust a test CA beside the floor, decoded and not,
// with libcurl + JSONDecoder as the baseline: over plain HTTP, and over HTTPS when TERN_BENCH_URL
// is an https URL and TERN_BENCH_CA names the CA's PEM file (each client then trusts it alone:
// libcurl from C, Tern through `CurlTransport(trusting:)`, AsyncHTTPClient through its TLS
// configuration). The server decides HTTP/1.1 or HTTP/2, by what it offers in ALPN. URLSession
// on Linux cannot be given a CA (see the Benchmarks article), so it runs over plain HTTP only.
//
//     swift run -c release ClientsAB [in flight] [requests per round] [rounds] [floor | floor, wide | floor, bytes | floor, clients | pipeline | a side's name | only sides whose name has this]

let arguments = CommandLine.arguments.dropFirst()
let width = arguments.first.flatMap { Int($0) } ?? 1
let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 500
let rounds = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 20
let only = arguments.dropFirst(3).first
guard let baseURL = ProcessInfo.processInfo.environment["TERN_BENCH_URL"] else {
    print("set TERN_BENCH_URL to a server with the fixture at /items (Benchmarks/nginx/bench does)")
    exit(1)
}
let url = URL(string: baseURL + "/items")!
/// The test CA's PEM file, over HTTPS.
let authorities = ProcessInfo.processInfo.environment["TERN_BENCH_CA"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
let session = URLSession(configuration: .default)
let overURLSession = ItemsAPI(baseURL: baseURL, transport: URLSessionTransport(), responseQueue: DispatchQueue(label: "tern.e2e.delivery"))
let overCurl = ItemsAPI(baseURL: baseURL, transport: try CurlTransport(trusting: authorities), responseQueue: DispatchQueue(label: "tern.e2e.delivery"))
let client = authorities.map { authorities in
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .file(authorities.path)
    return HTTPClient(configuration: HTTPClient.Configuration(tlsConfiguration: tls))
} ?? HTTPClient.shared
/// Over libcurl with an HTTPCache, asking for the fixture nginx says is fresh for an hour.
let cachedOverCurl = AbstractAPI(configuration: APIConfiguration(baseURL: baseURL, cache: HTTPCache()), transport: try CurlTransport(),
                                 responseQueue: DispatchQueue(label: "tern.e2e.delivery"))

/// One GET + decode with AsyncHTTPClient.
@Sendable func asyncHTTPClient() async throws -> [Item] {
    let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 20)
    return try JSONDecoder().decode([Item].self, from: Data(body.readableBytesView))
}

/// The floor: `count` GETs through libcurl from C, as wide as asked, each body decoded as
/// `decode` decodes it, or kept as bytes without it.
func rawCurlRound(_ raw: OpaquePointer?, _ decode: raw_curl_body?) throws {
    guard raw_curl_round(raw, Int32(count), decode, nil) == count else { throw URLError(.badServerResponse) }
}
/// The floor's handles for `path`, trusting the test CA over HTTPS.
func rawCurl(_ path: String) -> OpaquePointer? {
    let raw = raw_curl_open(baseURL + path, Int32(width))
    if let authorities { raw_curl_trust(raw, authorities.path) }
    return raw
}
nonisolated(unsafe) let rawItems = rawCurl("/items")
nonisolated(unsafe) let rawRepositories = rawCurl("/repos")
/// The floor as Tern must drive libcurl before 8.1.0: a new easy handle for each request.
nonisolated(unsafe) let rawFreshItems = {
    let raw = rawCurl("/items")
    raw_curl_use_fresh_handles(raw)
    return raw
}()

/// One GET through Tern over libcurl, the body kept as bytes, undecoded.
@Sendable func ternBytes() async throws -> [Item] {
    _ = try await (overCurl.request(route: .get("/items")) as Promise<Data>).value
    return []
}

/// One GET through a `CurlTransport` alone, no pipeline above it: what the transport costs. It
/// asks for JSON as Tern's request does, so that both put the same request on the wire.
let bareCurl = try CurlTransport(trusting: authorities)
let itemsRequest = {
    var request = URLRequest(url: url)
    request.setValue("application/json", forHTTPHeaderField: "Accept")
    return TransportRequest(urlRequest: request)
}()
@Sendable func transportAlone() async throws -> [Item] {
    _ = try await withCheckedThrowingContinuation { done in _ = bareCurl.send(itemsRequest, to: BodyCollector { done.resume(with: $0) }) }
    return []
}

/// The same through a second `CurlTransport`, its own thread and connections: the bare transport
/// against itself (`pipeline, a/a`), the spread this harness reads between two sides that do
/// the same work.
let bareCurlAgain = try CurlTransport(trusting: authorities)
@Sendable func transportAloneAgain() async throws -> [Item] {
    _ = try await withCheckedThrowingContinuation { done in _ = bareCurlAgain.send(itemsRequest, to: BodyCollector { done.resume(with: $0) }) }
    return []
}

/// The same GET through the transport alone, its body decoded with a new `JSONDecoder` on the
/// caller's thread: what any client over this transport does at best, by default, against the
/// decoded floor.
@Sendable func transportDecoded() async throws -> [Item] {
    let body = try await withCheckedThrowingContinuation { done in _ = bareCurl.send(itemsRequest, to: BodyCollector { done.resume(with: $0) }) }
    return try JSONDecoder().decode([Item].self, from: body)
}

/// The same GET through the transport alone, its end settling a `Promise` whose value the caller
/// awaits, its request made from a URL string as Tern makes one: the least any promise-returning
/// client over this transport costs, with none of the pipeline's stages.
let promisedDelivery = DispatchQueue(label: "tern.e2e.promised")
@Sendable func promisedTransport() async throws -> [Item] {
    _ = try await Overhead.promised(baseURL + "/items", over: bareCurl, delivery: promisedDelivery).value
    return []
}

/// One round of `count` requests, as wide as asked.
func round(_ request: @escaping @Sendable () async throws -> [Item]) async throws {
    if width == 1 {
        try await EndToEnd.sequential(count, request)
    } else {
        try await EndToEnd.inFlight(width, count, request)
    }
}

print("\(width == 1 ? "Sequential" : "\(width) in flight"), against \(baseURL), \(try CurlTransport.libraryVersion.get()):")
/// The body as bytes, undecoded, as RawCurl (the floor) keeps it: Tern, then the transport with
/// no pipeline above it, each also with its task on the transport's thread (no hand-off
/// between requests and answers). The pipeline's share is the difference.
let bytesSides: [(name: String, body: () async throws -> Void)] = [
    ("Tern over libcurl, bytes", { try await round { try await ternBytes() } }),
    ("Tern over libcurl, bytes, on its loop", {
        try await withTaskExecutorPreference(overCurl.transport.taskExecutor) { try await round { try await ternBytes() } }
    }),
    ("A promise over CurlTransport alone", { try await round { try await promisedTransport() } }),
    ("A promise over CurlTransport alone, on its loop", {
        try await withTaskExecutorPreference(bareCurl.taskExecutor) { try await round { try await promisedTransport() } }
    }),
    ("CurlTransport alone, bytes", { try await round { try await transportAlone() } }),
    ("CurlTransport alone, bytes, on its loop", {
        try await withTaskExecutorPreference(bareCurl.taskExecutor) { try await round { try await transportAlone() } }
    }),
]
/// The bare transport's sides beside the same over a second transport (`pipeline, a/a`).
let againSides = bytesSides.filter { $0.name.hasPrefix("CurlTransport alone, bytes") } + [
    ("CurlTransport alone again, bytes", { try await round { try await transportAloneAgain() } }),
    ("CurlTransport alone again, bytes, on its loop", {
        try await withTaskExecutorPreference(bareCurlAgain.taskExecutor) { try await round { try await transportAloneAgain() } }
    }),
]
let sides: [(name: String, body: () async throws -> Void)] = [
    ("raw URLSession", { try await round { try await EndToEnd.raw(session, url) } }),
    ("Tern over URLSession", { try await round { try await EndToEnd.tern(overURLSession) } }),
    ("Tern over libcurl", { try await round { try await EndToEnd.tern(overCurl) } }),
    ("AsyncHTTPClient", { try await round { try await asyncHTTPClient() } }),
] + bytesSides + [
    // Answered from the cache, fresh: no byte on the wire after the first.
    ("Tern over libcurl, cached", { try await round { try await cachedOverCurl.request(route: .get("/cached/items")).value } }),
]
/// Against the floor of a decoded request, each body decoded with a new JSONDecoder as the
/// other baselines do.
let floor: [(name: String, body: () async throws -> Void)] = [
    ("raw libcurl + JSONDecoder", {
        try rawCurlRound(rawItems) { bytes, length, _ in
            guard let bytes, (try? JSONDecoder().decode([Item].self, from: Data(bytes: bytes, count: length))) != nil else { return 0 }
            return 1
        }
    }),
    ("Tern over libcurl", { try await round { try await EndToEnd.tern(overCurl) } }),
    // The same, its task on the transport's thread: no hand-off between requests and answers.
    ("Tern over libcurl, on its loop", {
        try await withTaskExecutorPreference(overCurl.transport.taskExecutor) { try await round { try await EndToEnd.tern(overCurl) } }
    }),
    // The least any client over this transport does: no pipeline, no promise, `JSONDecoder`.
    ("CurlTransport alone + JSONDecoder", { try await round { try await transportDecoded() } }),
    ("CurlTransport alone + JSONDecoder, on its loop", {
        try await withTaskExecutorPreference(bareCurl.taskExecutor) { try await round { try await transportDecoded() } }
    }),
]
/// The clients that can trust a test CA, against the floor of a decoded request and beside the
/// floor itself: the same sides over plain HTTP and HTTPS.
let clientsFloor: [(name: String, body: () async throws -> Void)] = [
    floor[0],
    ("raw libcurl, bytes", { try rawCurlRound(rawItems, nil) }),
    ("Tern over libcurl", { try await round { try await EndToEnd.tern(overCurl) } }),
    ("AsyncHTTPClient", { try await round { try await asyncHTTPClient() } }),
]
/// The body as bytes against the floor of an undecoded request, in turns in this one process:
/// the issue's ratios, steadier than RawCurl and ClientsAB run one after the other.
let bytesFloor: [(name: String, body: () async throws -> Void)] = [
    ("raw libcurl, bytes", { try rawCurlRound(rawItems, nil) }),
    ("raw libcurl, bytes, a new handle each", { try rawCurlRound(rawFreshItems, nil) }),
] + bytesSides
let wideFloor: [(name: String, body: () async throws -> Void)] = [
    ("raw libcurl + JSONDecoder, wide", {
        try rawCurlRound(rawRepositories) { bytes, length, _ in
            guard let bytes, (try? JSONDecoder().decode([Repository].self, from: Data(bytes: bytes, count: length))) != nil else { return 0 }
            return 1
        }
    }),
    ("Tern over libcurl, wide", { try await round { _ = try await (overCurl.request(route: .get("/repos")) as Promise<[Repository]>).value; return [] } }),
]
/// Issue 27's targets for a side measured against the floor: the least throughput and, where
/// one is set, the most CPU per request, as ratios to the floor's. Prints each with the run's
/// ratio and whether it holds.
func check(_ ratios: [Alternation.Ratios], _ side: String, throughput least: Double, cpu most: Double? = nil) {
    guard let measured = ratios.first(where: { $0.name == side }) else { return }
    func verdict(_ holds: Bool) -> String { holds ? "met" : "not met" }
    var line = String(format: "Target: %@ at least %.2fx the floor's throughput: %.2fx, %@", side, least, measured.throughput,
                      verdict(measured.throughput >= least))
    if let most {
        line += String(format: "; at most %.2fx its CPU: %.2fx, %@", most, measured.cpu, verdict(measured.cpu <= most))
    }
    print(line)
}

switch only {
case "floor":
    check(try await Alternation.compare(count: count, rounds: rounds, floor), "Tern over libcurl", throughput: 1)
case "floor, wide":
    check(try await Alternation.compare(count: count, rounds: rounds, wideFloor), "Tern over libcurl, wide", throughput: 1)
case "floor, clients":
    try await Alternation.compare(count: count, rounds: rounds, clientsFloor)
case "pipeline":
    // Issue 57's target: Tern's bytes against the bare transport, each with a promise-only side.
    for suffix in ["", ", on its loop"] {
        try await Alternation.compare(count: count, rounds: rounds, ["CurlTransport alone, bytes", "A promise over CurlTransport alone", "Tern over libcurl, bytes"].map { name in
            bytesSides.first { $0.name == name + suffix }!
        })
    }
case "pipeline, a/a":
    // The bare transport against a second one: what the harness reads when both sides do the same.
    for suffix in ["", ", on its loop"] {
        try await Alternation.compare(count: count, rounds: rounds, ["CurlTransport alone, bytes", "CurlTransport alone again, bytes"].map { name in
            againSides.first { $0.name == name + suffix }!
        })
    }
case "floor, bytes":
    check(try await Alternation.compare(count: count, rounds: rounds, bytesFloor), "Tern over libcurl, bytes",
          throughput: width == 1 ? 0.5 : 0.75, cpu: 1.5)
default:
    // A side named exactly runs alone; otherwise every side whose name has the words.
    let exact = sides.filter { $0.name == only }
    try await Alternation.compare(count: count, rounds: rounds, exact.isEmpty ? sides.filter { only == nil || $0.name.contains(only!) } : exact)
}
if authorities != nil { try await client.shutdown().get() }
