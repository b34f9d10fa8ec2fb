#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// What is particular to the libcurl transport; everything else runs on it with the whole suite.
@Suite struct CurlTransportTests {
    @Test func aReleasedTransportEndsItsThread() async throws {
        let server = try LoopbackServer { _ in .json("[]") }
        defer { server.stop() }
        /// Weak references to the loops; a loop goes only once its thread has ended.
        final class Loops: @unchecked Sendable {
            private let lock = NSLock()
            private var loops: [() -> CurlLoop?] = []
            func add(_ loop: CurlLoop) { lock.withLock { loops.append { [weak loop] in loop } } }
            var alive: Int { lock.withLock { loops.filter { $0() != nil }.count } }
        }
        let loops = Loops()
        for _ in 0..<20 {
            let transport = try CurlTransport()
            loops.add(transport.loop)
            let api = AbstractAPI(transport: transport, responseQueue: .global())
            let body: Data = try await api.request(route: .get(server.baseURL + "/")).value
            #expect(body == Data("[]".utf8))
        }
        #expect(await eventually { loops.alive == 0 }, "\(loops.alive) of 20 loops still running")
    }

    @Test func itIsLinuxsDefault() throws {
        let api = AbstractAPI(responseQueue: .global())
        #expect(api.transport is CurlTransport)
        #expect(try CurlTransport.libraryVersion.get().hasPrefix("libcurl/"))
    }
}
#endif
