import Testing
@testable import Tern

struct AbsoluteURLTests {
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
    ])
    func requiresAHost(string: String, hasHost: Bool) {
        #expect(AbsoluteURL.hasSchemeAndHost(string) == hasHost)
    }
}
