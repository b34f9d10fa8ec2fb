#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// What is particular to the libcurl transport; everything else runs on it with the whole suite.
@Suite struct CurlTransportTests {
    /// The threads of this process.
    func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    @Test func aReleasedTransportEndsItsThread() async throws {
        let server = try LoopbackServer { _ in .json("[]") }
        defer { server.stop() }
        let before = threads()
        for _ in 0..<20 {
            let api = AbstractAPI(transport: try CurlTransport(), responseQueue: .global())
            let body: Data = try await api.request(route: .get(server.baseURL + "/")).value
            #expect(body == Data("[]".utf8))
        }
        // Twenty transports made twenty event threads; each ends once its API is gone.
        #expect(await eventually { threads() < before + 5 }, "threads: \(before) before, \(threads()) after")
    }

    @Test func itIsLinuxsDefault() throws {
        let api = AbstractAPI(responseQueue: .global())
        #expect(api.transport is CurlTransport)
        #expect(try CurlTransport.libraryVersion.get().hasPrefix("libcurl/"))
    }
}
#endif
