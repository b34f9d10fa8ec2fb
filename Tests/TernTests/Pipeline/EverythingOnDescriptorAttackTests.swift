#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// Many requests, 64 at once, through an API with every feature on (``EverythingOn``), in a
/// child process whose descriptor limit is lowered to 48 spare: fewer than the requests in
/// flight, each of which wants a socket, and the cache and the recording files. Every request
/// settles once, with its answer or a typed error; afterwards the recording reads whole, and
/// the cache answers what it kept from its files, none dropped as damaged.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .enabled(if: TestTransport.isCurl)) struct EverythingOnDescriptorAttackTests {
    static let requests = 2000
    static let inFlight = 64
    /// The paths the cache may keep (`public`, fresh for ten minutes), asked for by three
    /// requests in four; the others are not kept. (Each exchange the transport sees rewrites
    /// the recording whole, so fewer of them keep the child's run short.)
    static let kept = 20

    static func body(_ path: String) -> String { #"{"path": "\#(path)", "pad": "\#(String(repeating: "p", count: 600))"}"# }

    #if compiler(>=6.3)
    @Test(.exitTest) func manyRequestsUnderALowDescriptorLimitEachSettleAndLeaveTheFilesWhole() async throws {
        let site = try EverythingOn { request, connection in
            guard !EverythingOn.refused(request, on: connection) else { return true }
            let cacheable = request.path.hasPrefix("/c/")
            return connection.send(EverythingOn.response(Self.body(request.path), headers: cacheable
                ? "Cache-Control: public, max-age=600\r\n" : "Cache-Control: no-store\r\n"))
        }
        let pin = try site.serverPin
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [
                url = site.url as String, folderPath = site.folder.path as String, authorityPath = site.certificates.authority.path as String,
                pin = pin as String, key = site.apiKey as String, stale = site.staleToken as String, refresh = site.firstRefreshToken as String
            ] in
                let (folder, authority) = (URL(fileURLWithPath: folderPath), URL(fileURLWithPath: authorityPath))
                CrashBacktrace.printOnCrash()
                lowerThisProcesssPriority()
                let (log, signer) = (Recorder<String>(), TokenSigner(access: stale, refresh: refresh))
                guard DescriptorWaitAttackTests.lowerLimit(spare: 48),
                      let api = try? EverythingOn.api(url: url, folder: folder, authorities: authority, pins: [pin], apiKey: key,
                                                      jar: CookieJar(), signer: signer, log: log) else { exit(2) }
                let outcomes = Recorder<String>()
                let started = Date()
                await withTaskGroup(of: Void.self) { group in
                    for worker in 0..<EverythingOnDescriptorAttackTests.inFlight {
                        group.addTask {
                            for index in stride(from: worker, to: EverythingOnDescriptorAttackTests.requests, by: EverythingOnDescriptorAttackTests.inFlight) {
                                let path = index % 4 != 0 ? "/c/\(index / 4 % EverythingOnDescriptorAttackTests.kept)" : "/u/\(index)"
                                let promise: Promise<Response> = api.request(route: .get(path))
                                let outcome = await DescriptorFilesAttackTests.settledOnce(promise) { response in
                                    String(decoding: response.body, as: UTF8.self) == EverythingOnDescriptorAttackTests.body(path) ? "ok" : "wrong \(response.statusCode)"
                                }
                                outcomes.append(outcome)
                            }
                        }
                    }
                }
                let counts = Dictionary(outcomes.items.map { ($0, 1) }, uniquingKeysWith: +)
                print("outcomes: \(counts.keys.sorted().map { "\($0)=\(counts[$0]!)" }.joined(separator: ","))")
                print("settled: \(counts.values.reduce(0, +))")
                print("took \(Int(Date().timeIntervalSince(started) * 1000)) ms")
                let logged = log.items.joined(separator: "\n")
                print("log secrets: \([key, stale, refresh, signer.currentAccess].filter { logged.contains($0) }.count)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines.contains("settled: \(Self.requests)"), "\(printed)")
        #expect(lines.contains("log secrets: 0"), "\(printed)")
        let outcomes = lines.first { $0.hasPrefix("outcomes: ") }?.dropFirst("outcomes: ".count).split(separator: ",") ?? []
        #expect(outcomes.allSatisfy { $0.hasPrefix("ok=") || $0.hasPrefix("typed ") }, "\(printed)")
        #expect(outcomes.contains { $0.hasPrefix("ok=") }, "\(printed)")
        // The recording reads whole; no secret in it or in the cache's files.
        let recording = try String(contentsOf: site.recordingFile, encoding: .utf8)
        #expect(recording.contains("/u/"))
        _ = try RecordingTransport(file: site.recordingFile, mode: .replay)
        #expect(site.leakedSecrets() == [])
        // The cache answers what it kept from its files, none dropped as damaged (replayed, so
        // that nothing it lacks reaches the server).
        let heard = site.received.items.count
        let cache = try HTTPCache(directory: site.cacheDirectory)
        let signer = TokenSigner(access: site.currentToken ?? "none", refresh: "unused-refresh-token")
        let api = try site.api(mode: .replay, signer: signer) { $0.cache = cache }
        var hits = 0
        for index in 0..<Self.kept {
            let result = await (api.request(route: .get("/c/\(index)")) as Promise<Response>).result
            guard case .success(let response) = result else { Issue.record("/c/\(index): \(result)"); continue }
            #expect(String(decoding: response.body, as: UTF8.self) == Self.body("/c/\(index)"))
            hits += response.cacheOutcome == .hit ? 1 : 0
        }
        #expect(hits > 0)
        #expect(cache.corruptEntriesDropped == 0)
        #expect(site.received.items.count == heard)
    }
    #endif
}
#endif
