import Foundation
import Testing
@testable import Tern
@testable import TernCore

/// A host is compared as libcurl connects to it: every spelling of an IP address libcurl reads
/// as that address is that address, for pins and cookies alike.
@Suite(.onTestThreads) struct HostNameTests {
    /// Each spelling beside the address libcurl 7.88's URL parser made of it (`curl_url_get`
    /// of the host, checked on this machine); names stay names, in their ASCII form (Arabic-Indic
    /// digits are no address, and go in Punycode).
    @Test(arguments: [
        ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("0x7f.0.0.1", "127.0.0.1"), ("0X7F.0.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("127.00.0.1", "127.0.0.1"),
        ("1.2.3.0x4", "1.2.3.4"), ("0", "0.0.0.0"), ("0:0::1", "::1"), ("::FFFF:127.0.0.1", "127.0.0.1"),
        ("08.0.0.1", "08.0.0.1"), ("256.0.0.1", "256.0.0.1"), ("1.2.3.4.5", "1.2.3.4.5"), ("1..2", "1..2"), ("0x", "0x"),
        ("127.0.0.1.", "127.0.0.1."), ("4294967296", "4294967296"), ("1.16777216", "1.16777216"), ("+1.2.3.4", "+1.2.3.4"),
        ("Example.COM", "example.com"), ("1e2", "1e2"), ("١٢٧.0.0.1", "xn--9hbcp.0.0.1"), ("127.0.0.1", "127.0.0.1"),
        ("0.0.0.0", "0.0.0.0"), ("01.2.3.4", "1.2.3.4"), ("1.2.3.256", "1.2.3.256"), ("10.0.0.255", "10.0.0.255"),
        // IPv4-mapped: the IPv4 address it maps, which a socket connecting to it reaches. Other
        // forms that hold an IPv4 address are other hosts (`::127.0.0.1` connects to none here).
        ("::ffff:7f00:1", "127.0.0.1"), ("0:0:0:0:0:FFFF:7F00:0001", "127.0.0.1"), ("::ffff:0.0.0.0", "0.0.0.0"),
        ("::127.0.0.1", "::127.0.0.1"), ("::7f00:1", "::127.0.0.1"), ("64:ff9b::7f00:1", "64:ff9b::7f00:1"),
        ("::ffff:0:7f00:1", "::ffff:0:7f00:1"),
    ])
    func anAddressHasOneSpellingAndANameStaysAName(written: String, canonical: String) {
        #expect(HostName.canonical(written) == canonical)
    }

    /// A pin for an address holds however a URL spells it, and one given in another spelling
    /// holds for the address: otherwise `https://127.1/` reached the pinned server unchecked.
    @Test func aPinForAnAddressHoldsForEverySpellingOfIt() throws {
        let pin = "sha256/" + Data(repeating: 1, count: 32).base64EncodedString()
        let pins = try CertificatePins(["127.0.0.1": [pin], "0:0::1": [pin]])
        for host in ["127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "::1", "0::0:1"] {
            #expect(!pins.hashes(for: host).isEmpty, "\(host)")
        }
        #expect(pins.hashes(for: "127.0.0.2").isEmpty)
    }

    /// An IPv4-mapped address is the address it maps: `https://[::ffff:127.0.0.1]/` reached a
    /// server pinned for `127.0.0.1` unchecked. A NAT64 address reaches the address it holds
    /// through the network's translator, so that address's pins hold beside its own; an
    /// IPv4-compatible one reaches nothing of it.
    @Test func aPinForAnIPv4AddressHoldsForItsIPv6Spellings() throws {
        let pin = "sha256/" + Data(repeating: 1, count: 32).base64EncodedString()
        let other = "sha256/" + Data(repeating: 2, count: 32).base64EncodedString()
        let pins = try CertificatePins(["127.0.0.1": [pin], "64:ff9b::7f00:1": [other], "::ffff:10.0.0.1": [other]])
        for host in ["::ffff:127.0.0.1", "::FFFF:7f00:1", "0:0:0:0:0:ffff:7f00:1"] {
            #expect(pins.hashes(for: host) == [pin.dropFirst(7)].map(String.init), "\(host)")
        }
        #expect(Set(pins.hashes(for: "64:ff9b::127.0.0.1")) == Set([pin, other].map { String($0.dropFirst(7)) }))
        #expect(pins.hashes(for: "10.0.0.1") == [String(other.dropFirst(7))])
        #expect(pins.hashes(for: "::127.0.0.1").isEmpty)
        #expect(pins.hashes(for: "::ffff:127.0.0.2").isEmpty)
    }

    /// A cookie an address set goes back to it however a URL spells it; and an address spelled
    /// in hexadecimal is an address, which no `Domain` can widen (else `0x7f.0.0.1` could set
    /// one for `0.0.1`, which `0x7e.0.0.1`, another server, would then be sent).
    @Test func cookiesKnowAnAddressInEverySpelling() {
        let jar = CookieJar()
        jar.setCookies(from: ["session=1; Path=/"], for: URL(string: "http://127.0.0.1/")!)
        #expect(jar.headerValue(for: URL(string: "http://127.1/")!) == "session=1")
        jar.setCookies(from: ["planted=1; Domain=0.0.1; Path=/"], for: URL(string: "http://0x7f.0.0.1/")!)
        #expect(jar.headerValue(for: URL(string: "http://0x7e.0.0.1/")!) == nil)
        #expect(!jar.all.contains { $0.name == "planted" && !$0.isHostOnly })
        // Its IPv4-mapped spelling is the address too, both ways.
        #expect(jar.headerValue(for: URL(string: "http://[::ffff:127.0.0.1]/")!) == "session=1")
        jar.setCookies(from: ["mapped=1; Path=/"], for: URL(string: "http://[::ffff:7f00:2]/")!)
        #expect(jar.headerValue(for: URL(string: "http://127.0.0.2/")!) == "mapped=1")
        #expect(jar.headerValue(for: URL(string: "http://[::127.0.0.2]/")!) == nil)
    }
}
