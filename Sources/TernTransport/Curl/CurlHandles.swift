#if os(Linux)
import CTernCurl
import TernCore

/// The easy handles a transport's finished exchanges gave back, reset, for the next ones to take.
///
/// A new handle costs libcurl several kilobytes allocated and zeroed, and its defaults set up;
/// freeing one tears all that down again, and glibc tidies its free lists before each
/// allocation that large. A handle taken from here has had `curl_easy_reset`: every option
/// cleared and its last request's state gone. It keeps its TLS sessions, which libcurl resumes
/// only with the same host and settings, pins included (as it reuses connections). libcurl
/// 7.88 frees a transfer's buffers when it ends, so a kept handle holds no body; but it keeps
/// one pointer it should not (``CurlLibrary/resetHandlesAreSafe``), so before 8.1.0 no handle
/// is kept.
///
/// Taken and given back on any thread, hence the lock; a handle is given back only once it has
/// left the multi handle, so that no callback of its last transfer can come.
final class CurlHandles: Sendable {
    private let library: CurlLibrary
    private let kept = Locked([Handle]())
    /// How many handles are kept: as many as the idle connections they will mostly go out on.
    private let capacity: Int

    /// A handle, kept under the lock; only the thread that takes one uses it.
    private struct Handle: @unchecked Sendable {   // unchecked: libcurl's easy handle, a C pointer
        let easy: UnsafeMutableRawPointer
    }

    init(library: CurlLibrary, capacity: Int) {
        self.library = library
        self.capacity = capacity
    }

    private var curl: UnsafePointer<TernCurl> { library.api }

    /// A handle with libcurl's default options: one given back, or a new one.
    func take() -> UnsafeMutableRawPointer? {
        kept.withLock { $0.popLast() }?.easy ?? curl.pointee.easy_init()
    }

    /// Takes back `easy`, out of the multi handle, to be reset and kept, or freed if enough are
    /// (or none may be).
    func giveBack(_ easy: UnsafeMutableRawPointer) {
        // Freeing or resetting a handle frees its TLS sessions, in OpenSSL.
        guard capacity > 0 else { return CurlLibrary.exitWaits { curl.pointee.easy_cleanup(easy) } }
        CurlLibrary.exitWaits { curl.pointee.easy_reset(easy) }
        let handle = Handle(easy: easy)
        let isKept = kept.withLock { kept in
            guard kept.count < capacity else { return false }
            kept.append(handle)
            return true
        }
        if !isKept { CurlLibrary.exitWaits { curl.pointee.easy_cleanup(easy) } }
    }

    /// How many handles are kept, for tests.
    var keptCount: Int { kept.withLock(\.count) }

    deinit {
        CurlLibrary.exitWaits {
            for handle in kept.withLock({ $0 }) { curl.pointee.easy_cleanup(handle.easy) }
        }
    }
}
#endif
