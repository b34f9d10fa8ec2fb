import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies planted along a redirect chain that crosses two local servers (`localhost` and
/// `127.0.0.1`), each hop naming the other host, a public suffix or an IP address as its
/// domain, with the hops kept by an HTTP cache: each host keeps only what it may set for
/// itself, and a hop answered from the cache sets none of its cookies again.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieChainAttackTests {
    /// The two servers: `localhost:A/start` redirects to `127.0.0.1:B/mid`, which redirects to
    /// `localhost:A/end`; every hop is kept for ten minutes and sets cookies whose values are
    /// the round (the server's count of its hits of that path). `/check` records `Cookie`.
    final class Chain: Sendable {
        let hits = Recorder<String>()
        let sent = Recorder<String>()
        let a: LoopbackServer
        let b: LoopbackServer

        init() throws {
            let (hits, sent) = (hits, sent)
            let ports = Recorder<Int>()   // B's port, for A's answers
            a = try LoopbackServer { request in
                hits.append(request.path)
                let round = hits.items.count(where: { $0 == request.path })
                var response: ServerResponse
                switch request.path {
                case "/start":
                    response = ServerResponse(status: 302, headers: ["Location": "http://127.0.0.1:\(ports.items.first ?? 0)/mid", "Cache-Control": "max-age=600"])
                    response.repeatedFields = ["ip=\(round); Domain=127.0.0.1; Path=/", "suffix=\(round); Domain=co.uk; Path=/", "tld=\(round); Domain=com; Path=/",
                                               "self=\(round); Domain=localhost; Path=/", "start=\(round); Path=/"].map { ("Set-Cookie", $0) }
                case "/end":
                    response = ServerResponse(headers: ["Cache-Control": "max-age=600"], body: Data("end".utf8))
                    response.repeatedFields = [("Set-Cookie", "end=\(round); Path=/")]
                default:
                    sent.append("A \(request.headers["Cookie"] ?? "-")")
                    response = .text("checked")
                }
                return response
            }
            let aPort = a.port
            b = try LoopbackServer { request in
                hits.append("B" + request.path)
                let round = hits.items.count(where: { $0 == "B" + request.path })
                guard request.path == "/mid" else {
                    sent.append("B \(request.headers["Cookie"] ?? "-")")
                    return .text("checked")
                }
                var response = ServerResponse(status: 302, headers: ["Location": "http://localhost:\(aPort)/end", "Cache-Control": "max-age=600"])
                response.repeatedFields = ["back=\(round); Domain=localhost; Path=/", "octets=\(round); Domain=0.0.1; Path=/",
                                           "wider=\(round); Domain=0.1; Path=/", "mid=\(round); Domain=127.0.0.1; Path=/"].map { ("Set-Cookie", $0) }
                return response
            }
            ports.append(b.port)
        }

        deinit {
            a.stop()
            b.stop()
        }
    }

    /// The jar's cookies as `name=value@domain`, sorted.
    static func cookies(_ api: AbstractAPI) -> [String] {
        (api.cookieJar?.all ?? []).map { "\($0.name)=\($0.value)@\($0.domain)" }.sorted()
    }

    @Test(arguments: [false, true]) func aChainAcrossTwoHostsPlantsNothingAndACachedHopSetsNothingAgain(onDisk: Bool) async throws {
        let chain = try Chain()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cookie-chain-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                              responseQueue: .global())
        let start = "http://localhost:\(chain.a.port)/start"
        let end: String = try await api.request(route: .get(start)).value
        #expect(end == "end")
        // Each host kept what it set for itself alone: localhost naming itself is host-only.
        #expect(Self.cookies(api) == ["end=1@localhost", "mid=1@127.0.0.1", "self=1@localhost", "start=1@localhost"])
        _ = try await (api.request(route: .get("http://127.0.0.1:\(chain.b.port)/check")) as Promise<String>).value
        _ = try await (api.request(route: .get("http://localhost:\(chain.a.port)/check")) as Promise<String>).value
        #expect(chain.sent.items.first == "B mid=1", "\(chain.sent.items)")
        #expect(chain.sent.items.last.map { $0.hasPrefix("A ") ? Set($0.dropFirst(2).components(separatedBy: "; ")) : [] } == ["self=1", "start=1", "end=1"],
                "\(chain.sent.items)")
        // Again with an empty jar: what the cache answers sets no cookie; what the servers
        // answer again sets their second round's.
        api.cookieJar?.removeAll()
        let again: String = try await api.request(route: .get(start)).value
        #expect(again == "end")
        // (Every hop is kept, so the jar stays empty: the servers saw each hop once.)
        #expect(Self.cookies(api).allSatisfy { $0.contains("=2@") }, "a kept hop set its cookies again: \(Self.cookies(api)), \(chain.hits.items)")
        #expect(Self.cookies(api).allSatisfy { !$0.hasPrefix("ip=") && !$0.hasPrefix("suffix=") && !$0.hasPrefix("tld=") && !$0.hasPrefix("back=")
            && !$0.hasPrefix("octets=") && !$0.hasPrefix("wider=") })
    }
}
