import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport an API gets when it is given none: ``CurlTransport`` on Linux, where libcurl
/// can be loaded; ``URLSessionTransport`` elsewhere, and as the fallback, which is said once per
/// process on standard error.
package enum DefaultTransport {
    /// The one every API given no transport shares: one event thread, one connection pool and
    /// one per-host cap for the process, however many APIs it makes (each API held a thread and
    /// descriptors of its own, idle). Made when the first such API is.
    package static let shared: any Transport = make()

    private static func make() -> any Transport {
        #if os(Linux)
        do {
            return try CurlTransport()
        } catch {
            if hasNoticedFallback.withLock({ noticed in defer { noticed = true }; return !noticed }) {
                FileHandle.standardError.write(Data("Tern: \(error); requests go through URLSessionTransport instead.\n".utf8))
            }
        }
        #endif
        return URLSessionTransport()
    }

    #if os(Linux)
    private static let hasNoticedFallback = Locked(false)
    #endif
}
