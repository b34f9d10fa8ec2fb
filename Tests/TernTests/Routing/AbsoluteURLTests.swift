import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads) struct AbsoluteURLTests {
    @Test(arguments: [
        ("https://x", true), ("HTTP://X", true), ("git+ssh://x", true), ("/path://x", false), ("products", false),
        ("1x://y", false), ("http:x://y", false), ("a b://x", false), ("mailto:x", false), ("x:/y", false), ("", false),
    ])
    func recognisesASchemeFollowedBySlashes(string: String, isAbsolute: Bool) {
        #expect(AbsoluteURL.hasScheme(string) == isAbsolute)
    }

    @Test(arguments: [
        ("https://x.io/a", true), ("http://127.0.0.1:8080", true), ("http://user:pw@host/x", true),
        ("http://[::1]:80/", true), ("http://x?q#f", true), ("http:///path", false), ("http://:80", false),
        ("http://user@:80/", false), ("http://[]/", false), ("http://", false), ("mailto:x", false),
        ("//x.io/a", false), ("not a url", false),
        ("http://x:65535/", true), ("http://x:/a", true), ("http://[::1]/", true), ("http://x:99999", false),
        ("http://x:65536/a", false), ("http://x:8o/", false), ("http://x:-1", false), ("http://[::1]:70000", false),
        ("http://[::1]x", false), ("http://x:1:2", false), ("http://u:p@x:123456789012345678901234567890", false),
    ])
    func requiresAHost(string: String, hasHost: Bool) {
        #expect(AbsoluteURL.hasSchemeAndHost(string) == hasHost)
    }

    /// Only HTTP's schemes are sent, in any case.
    @Test(arguments: [
        ("http://x", true), ("https://x", true), ("HTTP://X", true), ("hTtPs://x", true), ("ftp://x", false), ("httpx://x", false),
        ("https:x", false), ("http:/x", false), ("httpss://x", false), ("ws://x", false), ("file://localhost/etc", false),
        ("http", false), ("https", false), ("", false), ("/http://x", false),
    ])
    func knowsHTTPsSchemes(string: String, isHTTP: Bool) {
        #expect(AbsoluteURL.hasHTTPScheme(string) == isHTTP)
    }

    @Test(arguments: [
        ("HTTP://X.io/A?Q#F", "http://X.io/A?Q#F"), ("Https://x", "https://x"), ("http://x", "http://x"),
        ("/Path://X", "/Path://X"), ("Products", "Products"), ("MAILTO:x", "MAILTO:x"), ("", ""),
        ("hTTp://ü.example/É", "http://ü.example/É"),
    ])
    func lowercasesTheSchemeAlone(string: String, lowered: String) {
        #expect(AbsoluteURL.lowercasingScheme(string) == lowered)
    }
}
