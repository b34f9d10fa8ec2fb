import Foundation
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport the pipeline tests run over: Tern's default kind (libcurl on Linux) unless
/// `TERN_TEST_TRANSPORT` names `urlsession` or `curl`, so the whole suite runs on each transport
/// in turn (`.ci/run` runs it on both). Each test's API gets one of its own, not the transport
/// APIs share by default: tests running side by side would share its connections and its cap.
enum TestTransport {
    static let name = ProcessInfo.processInfo.environment["TERN_TEST_TRANSPORT"] ?? "default"

    /// Whether the tests run over libcurl.
    static var isCurl: Bool {
        #if os(Linux)
        name != "urlsession"
        #else
        false
        #endif
    }

    /// Whether the transport under test refuses a connection on which bytes came while it was
    /// idle: libcurl does, through Tern; FoundationNetworking's URLSession does not.
    static var refusesStrayBytes: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test holds the server back when a reader pauses: libcurl
    /// does, and Apple's URLSession (its task suspended); FoundationNetworking's reads on.
    static var pauses: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test survives a chunked body with trailers: libcurl does;
    /// FoundationNetworking through Swift 6.3 ends the process ("Transfer completed, but there's
    /// no response"), having read the trailers as the start of another head.
    static var survivesTrailers: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test survives a `Content-Length` that a `Double` rounds to
    /// 2^63: libcurl does; FoundationNetworking converts libcurl's length, a `Double`, to an
    /// `Int64` in its header callback, and traps.
    static var survivesLengthsPastDoubles: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test keeps the body of a `3xx` without a `Location`:
    /// libcurl does; FoundationNetworking drops it.
    static var keepsBodiesOfRedirectsWithoutLocation: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test opens its sockets close-on-exec, so that a child process
    /// (an exit test's) inherits none and a connection it closes closes: libcurl does, through
    /// Tern; FoundationNetworking's does not.
    static var socketsCloseOnExec: Bool {
        #if canImport(FoundationNetworking)
        isCurl
        #else
        true
        #endif
    }

    /// Whether the transport under test hands each header field on its own, so that two
    /// `Set-Cookie` fields are told from one whose value holds a comma: libcurl does, through
    /// Tern; URLSession joins repeated fields with commas.
    static var readsFieldsOneByOne: Bool { isCurl }

    /// A new transport of the kind under test.
    static func make() -> (any Transport)? {
        switch name {
        case "urlsession":
            return URLSessionTransport()
        #if os(Linux)
        case "default":
            return (try? CurlTransport()) ?? URLSessionTransport()
        case "curl":
            do {
                return try CurlTransport()
            } catch {
                fatalError("TERN_TEST_TRANSPORT=curl, but \(error)")
            }
        #endif
        default:
            return nil
        }
    }
}
