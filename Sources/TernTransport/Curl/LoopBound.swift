#if os(Linux)
import CTernCurl

/// The identity of one loop's thread: the loop marks its thread with it, first thing, and
/// ``LoopBound`` asks it whether the caller is that thread.
final class LoopThread: Sendable {
    /// Marks the calling thread as this one, for the rest of the thread's life.
    func markCurrent() {
        tern_mark_thread_loop(Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether the caller runs on the thread marked as this one.
    var isCurrent: Bool {
        tern_thread_loop() == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }
}

/// State that one loop's thread owns: made on any thread (a loop and an exchange are set up
/// before the loop's thread takes them), then read and changed on that thread alone. A debug
/// build stops the program when another thread touches it; a release build checks nothing,
/// and the box is its value and nothing more, since the transport's hot path goes through it.
///
/// Not `Sendable`: its owner, a class with libcurl's pointers, is `@unchecked Sendable`, and
/// this box is what makes good that owner's word that its state is the loop thread's.
struct LoopBound<Value> {
    private var stored: Value
    #if DEBUG
    private let owner: LoopThread
    #endif

    /// Holds `value` for the thread `owner` marks.
    init(_ value: Value, owner: LoopThread) {
        stored = value
        #if DEBUG
        self.owner = owner
        #endif
    }

    /// The state, on the owner's thread.
    var value: Value {
        _read {
            checkThread()
            yield stored
        }
        _modify {
            checkThread()
            yield &stored
        }
    }

    /// The state, on whatever thread lets go of its holder last, from the holder's `deinit`:
    /// nothing else can reach it then.
    var valueInDeinit: Value {
        _read { yield stored }
        _modify { yield &stored }
    }

    @inline(__always)
    private func checkThread() {
        #if DEBUG
        precondition(owner.isCurrent, "state owned by a libcurl loop's thread was touched from another thread")
        #endif
    }
}
#endif
