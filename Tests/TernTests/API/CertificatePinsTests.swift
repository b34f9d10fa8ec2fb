import Foundation
import Testing
import TernTesting
@testable import Tern
@testable import TernCore
@testable import TernTransport
@testable import TernSnippets

/// Which pins a host gets: exact names, `*.` for one label more, case and the root's dot
/// ignored; and pins that are not a SHA-256 in Base64 refused when the pins are made.
@Suite(.onTestThreads) struct CertificatePinsTests {
    static let a = "sha256/" + Data(repeating: 1, count: 32).base64EncodedString()
    static let b = "sha256/" + Data(repeating: 2, count: 32).base64EncodedString()
    static let c = "sha256/" + Data(repeating: 3, count: 32).base64EncodedString()

    static func hashes(_ pins: [String]) -> [String] { pins.map { String($0.dropFirst(7)) } }

    @Test func anExactHostMatchesItselfOnly() throws {
        let pins = try CertificatePins(["api.shop.example": [Self.a, Self.b]])
        #expect(pins.hashes(for: "api.shop.example") == Self.hashes([Self.a, Self.b]))
        #expect(pins.hashes(for: "API.Shop.Example.") == Self.hashes([Self.a, Self.b]))
        #expect(pins.hashes(for: "shop.example").isEmpty)
        #expect(pins.hashes(for: "x.api.shop.example").isEmpty)
        #expect(pins.hashes(for: "api.shop.example.evil").isEmpty)
        #expect(pins.hashes(for: "evilapi.shop.example").isEmpty)
    }

    @Test func aWildcardMatchesOneLabelOnly() throws {
        let pins = try CertificatePins(["*.shop.example": [Self.a]])
        #expect(pins.hashes(for: "api.shop.example") == Self.hashes([Self.a]))
        #expect(pins.hashes(for: "cdn.shop.example.") == Self.hashes([Self.a]))
        #expect(pins.hashes(for: "shop.example").isEmpty)
        #expect(pins.hashes(for: "a.b.shop.example").isEmpty)
        #expect(pins.hashes(for: ".shop.example").isEmpty)
        #expect(pins.hashes(for: "evilshop.example").isEmpty)
        #expect(pins.hashes(for: "api.shop.example.com").isEmpty)
    }

    @Test func aHostMatchingSeveralEntriesTakesTheirPinsTogether() throws {
        let pins = try CertificatePins(["*.shop.example": [Self.a, Self.b], "api.shop.example": [Self.b, Self.c]])
        #expect(Set(pins.hashes(for: "api.shop.example")) == Set(Self.hashes([Self.a, Self.b, Self.c])))
        #expect(pins.hashes(for: "api.shop.example").count == 3)
        #expect(pins.hashes(for: "www.shop.example") == Self.hashes([Self.a, Self.b]))
    }

    @Test func whatIsNoPinIsRefused() {
        let bad: [[String: [String]]] = [
            ["api.shop.example": ["r8udi/Mxd6pLOS73t7GpHAvPdwWQiICjvcJqgsyjpsE="]],          // no sha256/
            ["api.shop.example": ["sha1/" + Data(count: 20).base64EncodedString()]],
            ["api.shop.example": ["sha256/" + Data(count: 31).base64EncodedString()]],     // not 32 bytes
            ["api.shop.example": ["sha256/not base64!"]],
            ["api.shop.example": []],                                                       // no pin at all
            ["*.": [Self.a]], ["**.shop.example": [Self.a]], ["api.*.example": [Self.a]],
            ["": [Self.a]], ["shop..example": [Self.a]], ["a shop.example": [Self.a]],
        ]
        for pins in bad {
            #expect(throws: CertificatePins.InvalidPin.self, "\(pins)") { try CertificatePins(pins) }
        }
        // Each says what is wrong: the pin, the host, or that there is no pin.
        func said(_ pins: [String: [String]]) -> String {
            do { _ = try CertificatePins(pins) } catch { return "\(error)" }
            return "accepted"
        }
        #expect(said(["shop.example": ["sha256/not-base64"]]) == #"The pin "sha256/not-base64" for "shop.example" is not "sha256/" followed by the Base64 of a 32-byte hash."#)
        #expect(said(["shop..example": [Self.a]]) == #""shop..example" is not a host name, nor "*." and one: its pins cannot be checked."#)
        #expect(said(["shop.example": []]) == #"The host "shop.example" is given no pins: give it its key's and a backup's."#)
    }

    @Test func pinsAreKeptInOneSpelling() throws {
        // The same hash written without padding's line breaks or in another order of hosts.
        let one = try CertificatePins(["b.example": [Self.a], "a.example": [Self.b]])
        let two = try CertificatePins(["a.example": [Self.b], "b.example": [Self.a]])
        #expect(one == two)
        #expect(one != (try CertificatePins(["a.example": [Self.a]])))
    }

    @Test func theDocumentedPinsAreValid() throws {
        #expect(try Readme.pinning().configuration.certificatePins?.hashes(for: "img.cdn.shop.example").count == 1)
        #expect(try Tour.pinning().configuration.certificatePins?.hashes(for: "shop.example").count == 2)
    }

    /// An API with pins runs on stubs, which have no keys to check.
    @Test func aPinnedAPIRunsOnStubs() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/ping", answers: .text("pong")))
        let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", certificatePins: try CertificatePins(["shop.example": [Self.a]])),
                               transport: stubs, responseQueue: .global())
        #expect(try await (client.request(route: .get("/ping")) as Promise<String>).value == "pong")
    }

    /// A transport that checks keys, and notes the ones each request asks it to check; it
    /// connects nowhere.
    final class KeyNotingTransport: KeyPinningTransport, @unchecked Sendable {
        let pinned = Recorder<[String]>()
        var canPinKeys: Bool { true }
        var trustMark: String? { "noting" }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            pinned.append(request.pinnedKeys)
            receiver.didComplete(with: URLError(.cannotConnectToHost))
            return NoTask()
        }
    }

    /// A pinned host written so that Foundation hands its name back decoded, not as libcurl
    /// connects to it: percent-encoded UTF-8 (`b%C3%BCcher.example`, to libcurl, with libidn2,
    /// `xn--bcher-kva.example`), ideographic full stops, full-width letters. Each request carries
    /// the host's pins: compared as Foundation gave it, it went unpinned, past a certificate
    /// any trusted authority signed (the curl tool, on this libcurl, connects to the pinned
    /// name for each).
    @Test(arguments: ["https://b%C3%BCcher.example/x", "https://B%C3%9Ccher.example/x", "https://xn--bcher-kva.example/x",
                      "https://b%C3%BCcher.example%E3%80%82/x", "https://api%E3%80%82shop.example/x", "https://%EF%BD%81pi.shop.example/x"])
    func aPinnedHostIsPinnedHoweverItsNameIsWritten(url: String) async throws {
        let transport = KeyNotingTransport()
        let pins = try CertificatePins(["xn--bcher-kva.example": [Self.a], "api.shop.example": [Self.b]])
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, certificatePins: pins), transport: transport, responseQueue: .global())
        _ = await (api.request(route: .get(url)) as Promise<Response>).result
        #expect(transport.pinned.items.count == 1 && transport.pinned.items.allSatisfy { !$0.isEmpty }, "\(transport.pinned.items)")
    }

    /// Punycode as RFC 3492 gives it.
    @Test func namesAreComparedInTheirASCIIForm() {
        #expect(HostName.canonical("bücher.example") == "xn--bcher-kva.example")
        #expect(HostName.canonical("MÜNCHEN.de") == "xn--mnchen-3ya.de")
        #expect(HostName.canonical("例え.テスト") == "xn--r8jz45g.xn--zckzah")
        #expect(HostName.canonical("ａｐｉ。shop.example") == "api.shop.example")
        #expect(HostName.canonical("api.shop.example") == "api.shop.example")
    }
}
