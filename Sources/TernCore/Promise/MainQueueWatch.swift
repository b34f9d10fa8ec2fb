import Foundation

/// Says once, on standard error, that callbacks wait for a main queue that does not run.
///
/// Callbacks, and a chain's steps given no queue, run on the client's `responseQueue`, the main
/// queue by default. A program whose main thread blocks (a semaphore, a server's synchronous
/// `main`), or ends its top-level code with no `dispatchMain()`, never runs them: it hung in
/// silence, the first trap of a new user's first hour. The first hop to the main queue arms the
/// watch; if that queue has not run what was put on it `patience` seconds later, the watch says
/// so, once for the process.
@usableFromInline
package final class MainQueueWatch: Sendable {
    /// The process's watch over the main queue: five seconds, about when a person waiting
    /// starts to wonder.
    @usableFromInline
    package static let main = MainQueueWatch(watching: .main, patience: 5) { words in
        FileHandle.standardError.write(Data(words.utf8))
    }

    private let queue: DispatchQueue
    /// Marks the watched queue, so that a hop is known to go there without comparing labels:
    /// on Linux each `DispatchQueue.main` is a new wrapper, never identical to another.
    private let mark = DispatchSpecificKey<Bool>()
    private let patience: TimeInterval
    private let say: @Sendable (String) -> Void
    /// Whether the watch has been armed, and whether the queue has run since.
    private let phase = Locked(Phase.waitingForAHop)

    private enum Phase {
        case waitingForAHop, armed, ran
    }

    /// A watch over `queue`, saying through `say`.
    package init(watching queue: DispatchQueue, patience: TimeInterval, say: @escaping @Sendable (String) -> Void) {
        self.queue = queue
        self.patience = patience
        self.say = say
        queue.setSpecific(key: mark, value: true)
    }

    /// Whether the caller runs on the watched queue (the main actor's jobs do too, on a worker
    /// thread once the main thread calls `dispatchMain()`).
    package var isCurrent: Bool { DispatchQueue.getSpecific(key: mark) == true }

    /// Notes a hop to `target`: the first one to the watched queue arms the watch.
    @usableFromInline
    package func noteHop(to target: DispatchQueue) {
        guard target.getSpecific(key: mark) == true else { return }
        let first = phase.withLock { phase in
            guard phase == .waitingForAHop else { return false }
            phase = .armed
            return true
        }
        guard first else { return }
        queue.async { [self] in phase.withLock { $0 = .ran } }
        DispatchQueue.global().asyncAfter(deadline: .now() + patience) { [self] in
            guard phase.withLock({ $0 == .armed }) else { return }
            say("""
                Tern: a promise's callbacks wait for the main queue (the client's responseQueue, by default), \
                which has not run for \(Int(patience)) s. A program whose main thread blocks gives its \
                clients responseQueue: .global(); one with no top-level await ends with dispatchMain().

                """)
        }
    }
}
