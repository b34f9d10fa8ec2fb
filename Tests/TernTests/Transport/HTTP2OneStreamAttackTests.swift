#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// HTTP/2 over TLS from a server that allows one stream at a time
/// (SETTINGS_MAX_CONCURRENT_STREAMS = 1, sent on each connection before its first answer) and
/// resets every 7th request it sees (RST_STREAM INTERNAL_ERROR, or CANCEL), while 200 GETs go
/// through one API at once. Held to: "every promise settles exactly once with a typed
/// APIError" (the suite's time limit bounds a hang), and "never a silently wrong answer": each answered
/// promise carries a body no other promise carries, and as many promises fail as streams were
/// reset.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2OneStreamAttackTests {
    struct Item: Codable, Equatable {
        let name: String
    }

    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var seen = 0
        private var resets = 0
        /// Counts a request; true when it is every 7th.
        func next() -> Bool {
            lock.withLock {
                seen += 1
                if seen % 7 == 0 { resets += 1 }
                return seen % 7 == 0
            }
        }
        var reset: Int { lock.withLock { resets } }
    }

    @Test(arguments: [UInt32(2), UInt32(8)]) func twoHundredGetsThroughOneStreamWithResets(error: UInt32) async throws {
        let count = Count()
        let server = try ScriptedHTTP2Server { request, connection in
            if connection.held.isEmpty {
                connection.held.append(0)
                connection.send(.settings, 0, 0, Data([0x00, 0x03, 0, 0, 0, 1]))
            }
            if count.next() {
                connection.send(.reset, 0, request.stream, Data([UInt8(error >> 24), UInt8(error >> 16 & 0xff), UInt8(error >> 8 & 0xff), UInt8(error & 0xff)]))
            } else {
                connection.answer(request.stream)
            }
        }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let promises: [Promise<[Item]>] = (0..<200).map { api.request(route: .get(server.url + "/item/\($0)")) }
        // A promise that never settles is held by the suite's time limit.
        var results: [Result<[Item], any Error>] = []
        for promise in promises { results.append(await promise.result) }
        var names: [String: Int] = [:]
        var failures: [String] = []
        for result in results {
            switch result {
            case .success(let items): items.forEach { names[$0.name, default: 0] += 1 }
            case .failure(let error as APIError): failures.append("\(error)")
            case .failure(let error): Issue.record("an untyped error: \(error)")
            }
        }
        #expect(names.values.allSatisfy { $0 == 1 }, "a body carried by two promises: \(names.filter { $0.value > 1 })")
        #expect(failures.count == count.reset, "\(failures.count) failures for \(count.reset) resets; requests seen: \(server.requests.count); failures: \(Set(failures))")
        #expect(failures.count + names.count == 200)
    }
}
#endif
