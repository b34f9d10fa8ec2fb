import Foundation
import Testing
@testable import Tern
import TernTesting

/// What a request did on the wire, on its response and in the logger, as libcurl measures it
/// (FoundationNetworking measures nothing: there the metrics are empty).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MetricsTests {
    func api(retries: Bool = false, plugins: [any Plugin] = []) -> AbstractAPI {
        let policy = retries ? RetryPolicy(maxRetries: 2, baseDelay: 0.01) : .never
        return AbstractAPI(configuration: APIConfiguration(retryPolicy: policy, plugins: plugins), transport: TestTransport.make(), responseQueue: .global())
    }

    @Test func aResponseCarriesItsExchangesMetrics() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { _ = connection.send(RawServer.Connection.response(String(repeating: "x", count: 873))) }
        }
        defer { server.stop() }
        let api = api()
        let first: Response = try await api.request(route: .get(server.baseURL + "/one")).value
        let second: Response = try await api.request(route: .get(server.baseURL + "/two")).value
        guard TestTransport.isCurl else {
            #expect(first.metrics.isEmpty)
            return
        }
        let wire = try #require(first.metrics.last)
        #expect(first.metrics.count == 1)
        #expect(wire.url?.path == "/one")
        #expect(wire.statusCode == 200)
        #expect(wire.bytesReceived == 873)
        #expect(wire.bytesSent == 0)
        #expect(wire.httpVersion == "HTTP/1.1")
        #expect(wire.tlsHandshake == nil)
        let total = try #require(wire.total)
        #expect(total > 0 && (wire.firstByte ?? .infinity) <= total && (wire.connect ?? .infinity) <= total)
        #expect(wire.reusedConnection == false)
        #expect(second.metrics.last?.reusedConnection == true)
    }

    /// libcurl 7.88 starts its first-byte clock as an upload's body starts: an answer that comes
    /// well after the body must say so, for a POST as for a GET (the server waits; only a lower
    /// bound is checked, which a loaded machine cannot break).
    @Test func aBodysFirstByteIsTheAnswers() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                Thread.sleep(forTimeInterval: 1.5)
                _ = connection.send(RawServer.Connection.response("ok"))
            }
        }
        defer { server.stop() }
        let response: Response = try await api().request(route: .post(server.baseURL + "/token"),
                                                         parameters: FormParameters(["grant_type": "client_credentials"])).value
        guard TestTransport.isCurl else { return }
        let wire = try #require(response.metrics.last)
        #expect(wire.bytesSent > 0)
        let firstByte = try #require(wire.firstByte)
        #expect(firstByte >= 1.0, "the answer came 1.5 s after the body, not at \(firstByte) s: \(wire)")
        #expect(firstByte <= (wire.total ?? 0), "\(wire)")
    }

    @Test func redirectsAndRetriesEachHaveTheirOwn() async throws {
        let served = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let count = served.withLock { count in
                    count += 1
                    return count
                }
                if request.hasPrefix("GET /old ") {
                    _ = connection.send("HTTP/1.1 302 Found\r\nLocation: /new\r\nContent-Length: 0\r\n\r\n")
                } else if count == 2 {
                    _ = connection.send(RawServer.Connection.response("busy", status: "503 Service Unavailable"))
                } else {
                    _ = connection.send(RawServer.Connection.response("here"))
                }
            }
        }
        defer { server.stop() }
        let response: Response = try await api(retries: true).request(route: .get(server.baseURL + "/old")).value
        guard TestTransport.isCurl else { return }
        #expect(response.metrics.map(\.statusCode) == [302, 503, 200])
        #expect(response.metrics.map { $0.url?.path } == ["/old", "/new", "/new"])
    }

    @Test func theLoggerPrintsOneLineWithThem() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { _ = connection.send(RawServer.Connection.response("ok")) }
        }
        defer { server.stop() }
        let log = Recorder<String>()
        let logger = LoggerPlugin(level: .response) { log.append($0) }
        let _: String = try await api(plugins: [logger]).request(route: .get(server.baseURL + "/logged")).value
        let line = try #require(log.items.first { $0.hasPrefix("← 200") })
        if TestTransport.isCurl {
            #expect(line.contains("first byte") && line.contains("HTTP/1.1") && line.contains("new connection"), "\(line)")
        } else {
            #expect(!line.contains("first byte"), "\(line)")
        }
    }
}
