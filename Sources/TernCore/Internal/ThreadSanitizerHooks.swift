#if !canImport(Darwin) && !TERN_PTHREAD_LOCK
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The thread sanitizer's annotations of a lock, when the process runs under it.
///
/// `Mutex` hands a contended lock over inside the kernel, where the sanitizer cannot see it:
/// without a word from ``Locked``, two threads' turns at one lock read as a race, and a user's
/// `swift test --sanitize=thread` reports Tern. The hooks are looked up in the process as it
/// runs, since nothing at compile time says a build is sanitized; elsewhere they are `nil`.
@usableFromInline
package enum ThreadSanitizerHooks {
    /// A sanitizer annotation: the address names the lock.
    @usableFromInline
    package typealias Hook = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// `__tsan_acquire` and `__tsan_release`, or `nil` in a process without the sanitizer.
    @usableFromInline
    package static let hooks: (acquire: Hook, release: Hook)? = {
        guard let acquire = dlsym(nil, "__tsan_acquire"), let release = dlsym(nil, "__tsan_release") else { return nil }
        return (unsafeBitCast(acquire, to: Hook.self), unsafeBitCast(release, to: Hook.self))
    }()
}
#endif
