import Foundation
import Tern

/// The transport the pipeline tests run over: URLSession unless `TERN_TEST_TRANSPORT=curl`, so
/// the whole suite runs on each transport in turn (`.ci/run` runs it on both).
enum TestTransport {
    static let name = ProcessInfo.processInfo.environment["TERN_TEST_TRANSPORT"] ?? "urlsession"

    /// A new transport of the kind under test.
    static func make() -> any Transport {
        #if os(Linux)
        if name == "curl" {
            do {
                return try CurlTransport()
            } catch {
                fatalError("TERN_TEST_TRANSPORT=curl, but \(error)")
            }
        }
        #endif
        return URLSessionTransport()
    }
}
