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

    // Exit tests that capture values need Swift 6.3.
    #if compiler(>=6.3)
    @Test func withoutLibcurlTheDefaultIsURLSessionSaidOnce() async throws {
        let server = try LoopbackServer { _ in .text("over URLSession") }
        defer { server.stop() }
        let child = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [url = server.baseURL as String] in
            setenv("TERN_LIBCURL", "libtern-no-such-curl.so.4", 1)
            guard case .failure = CurlTransport.libraryVersion else { exit(EXIT_FAILURE) }
            let apis = [AbstractAPI(responseQueue: .global()), AbstractAPI(responseQueue: .global())]
            for api in apis {
                guard api.transport is URLSessionTransport else { exit(EXIT_FAILURE) }
                let text: String = try await api.request(route: .get(url)).value
                guard text == "over URLSession" else { exit(EXIT_FAILURE) }
            }
        }
        let said = child.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        let lines = said.split(separator: "\n").filter { $0.hasPrefix("Tern:") }
        #expect(lines.count == 1, "\(said)")
        #expect(lines.first?.contains("libcurl is not available: libtern-no-such-curl.so.4") == true, "\(said)")
        #expect(lines.first?.hasSuffix("requests go through URLSessionTransport instead.") == true, "\(said)")
    }

    @Test func aLibraryThatIsNotLibcurlIsRefusedByName() async throws {
        // zlib: on every system that has libcurl, which links it.
        let child = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            setenv("TERN_LIBCURL", "libz.so.1", 1)
            do throws(CurlUnavailable) {
                _ = try CurlTransport()
            } catch {
                print(error.reason)
            }
        }
        #expect(child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } == "libz.so.1 has no curl_global_init\n")
    }
    #endif

    @Test func itIsLinuxsDefault() throws {
        let api = AbstractAPI(responseQueue: .global())
        #expect(api.transport is CurlTransport)
        #expect(try CurlTransport.libraryVersion.get().hasPrefix("libcurl/"))
    }
}
#endif
