#if os(Linux)
import Foundation
import Testing
import TernCore
@testable import TernTransport

/// The guard on the connection libcurl chose, among a loop's connections, without libcurl
/// choosing any: HTTPS connections shared only over HTTP/2 once an origin claimed it over
/// HTTP/1, plain HTTP never asked. Stray bytes on an idle connection are
/// `CurlConnectionsTests`' and `ConnectionReuseTests`'.
@Suite(.onTestThreads) struct ConnectionGuardTests {
    let ends = CurlConnections.Ends(localPort: 50_000, peerAddress: "127.0.0.1", peerPort: 443)

    @Test func plainHTTPIsWrittenWithoutAskingTLSOrCarrying() throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        var plain = ConnectionGuard(tlsOrigin: nil)
        let verdict = plain.check(ends, among: connections) {
            Issue.record("TLS asked over plain HTTP")
            return 0
        }
        #expect(verdict == .write(mayBeHTTP2: nil))
        #expect(plain.carrying == nil)
        #expect(!connections.isCarrying(ends))
    }

    @Test func anHTTPSConnectionIsCarriedUntilTheExchangeLeaves() throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        var first = ConnectionGuard(tlsOrigin: "example.com:443")
        #expect(first.check(ends, among: connections) { 0 } == .write(mayBeHTTP2: false))
        #expect(first.carrying == ends)
        #expect(connections.isCarrying(ends))
        // Run again (libcurl chose anew): carried once, not twice.
        #expect(first.check(ends, among: connections) { -1 } == .write(mayBeHTTP2: true))
        first.leave(connections)
        #expect(first.carrying == nil)
        #expect(!connections.isCarrying(ends))
    }

    /// A request whose method may not be sent twice is written on one connection only: libcurl,
    /// sending it again by itself on a second (the first closed unanswered), is refused. One
    /// that may be sent twice is let through.
    @Test(arguments: [nil, "example.com:443"]) func aRequestWrittenOnceIsNotWrittenAgainUnlessItMayBe(origin: String?) throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        var once = ConnectionGuard(tlsOrigin: origin, writesOnce: true)
        #expect(once.check(ends, among: connections) { 1 } == .write(mayBeHTTP2: origin == nil ? nil : true))
        #expect(once.check(ends, among: connections) { 1 } == .writtenAlready)
        once.leave(connections)
        var twice = ConnectionGuard(tlsOrigin: origin)
        #expect(twice.check(ends, among: connections) { 1 } == .write(mayBeHTTP2: origin == nil ? nil : true))
        #expect(twice.check(ends, among: connections) { 1 } == .write(mayBeHTTP2: origin == nil ? nil : true))
        twice.leave(connections)
    }

    /// Once an origin said HTTP/2 over HTTP/1, libcurl 7.88 shares its connections: a carried
    /// one is refused unless TLS negotiated HTTP/2.
    @Test func aSharedConnectionIsRefusedOnceTheOriginClaimedHTTP2() throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        var first = ConnectionGuard(tlsOrigin: "example.com:443")
        _ = first.check(ends, among: connections) { 0 }
        var second = ConnectionGuard(tlsOrigin: "example.com:443")
        #expect(second.check(ends, among: connections) { 0 } == .write(mayBeHTTP2: false))
        second.leave(connections)

        connections.noteClaimOfHTTP2(by: "example.com:443")
        #expect(second.check(ends, among: connections) { 0 } == .sharedConnection)
        #expect(second.carrying == nil)
        #expect(second.check(ends, among: connections) { 1 } == .write(mayBeHTTP2: true))
        second.leave(connections)
        // Another origin's claim is not this one's.
        var other = ConnectionGuard(tlsOrigin: "example.org:443")
        #expect(other.check(ends, among: connections) { 0 } == .write(mayBeHTTP2: false))
    }

    @Test(arguments: [
        ("HEAD", 200, "HTTP/1.1", ["Content-Length": "5"], true),
        ("HEAD", 200, "HTTP/1.1", ["Content-Length": "0"], false),
        ("HEAD", 200, "HTTP/1.1", ["Content-Length": " 0 "], false),
        ("GET", 204, "HTTP/1.1", ["Transfer-Encoding": "chunked"], true),
        ("GET", 304, "HTTP/1.0", ["Content-Length": "12"], true),
        ("GET", 200, "HTTP/1.1", ["Content-Length": "12"], false),
        ("HEAD", 200, "HTTP/2", ["Content-Length": "5"], false),
        ("GET", 204, "HTTP/1.1", [:], false),
    ])
    func aBodyThatCannotComeButIsDeclaredClosesTheConnection(method: String, status: Int, version: String, fields: [String: String],
                                                              closes: Bool) throws {
        let head = try #require(ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: status, httpVersion: version,
                                             headers: HTTPHeaders(fields.map { ($0.key, $0.value) })))
        #expect(ConnectionGuard.declaresABodyThatCannotCome(head, method: method) == closes)
    }
}
#endif
