#if os(Linux)
/// What a libcurl loop runs, what waits for its origin, and what each event asks of libcurl: the
/// loop's bookkeeping as a value that takes an event and returns the actions to run, so that
/// every order of events (a cancel after the end, a cancel while waiting, a retry refused again)
/// is tested without a socket. The loop's thread owns it; it does no I/O.
///
/// Each exchange ends with exactly one ``Action/complete(_:code:)``, whatever the order of events.
///
/// An exchange that libcurl could make no socket for, the process short of descriptors, waits
/// for another to leave libcurl, and runs again then; meanwhile libcurl keeps no more
/// connections open than exchanges run (``Action/limitConnections(to:)``), so that it closes an
/// idle one before it opens one. The last one running runs again at once, libcurl closing an
/// idle connection first if it keeps one; lacking a descriptor a second time, it fails. One that
/// another loop's exchanges hold the descriptors from (streams run on a loop of their own) waits
/// for one of them to leave libcurl instead (``descriptorFreedElsewhere()``).
struct CurlLoopState<Exchange: AnyObject> {
    /// What the loop does with libcurl, in order.
    enum Action {
        /// Hands the exchange to libcurl. If libcurl refuses it, the loop reports
        /// ``CurlLoopState/refused(_:origin:)``.
        case add(Exchange)
        /// Takes the exchange back from libcurl, which was running it.
        case remove(Exchange)
        /// Hands the exchange to libcurl again, on a connection of its own.
        case addOnNewConnection(Exchange)
        /// Reports the exchange's end: libcurl's result, or `nil` for a cancel.
        case complete(Exchange, code: Int32?)
        /// Hands an exchange that waited for a descriptor to libcurl again, on any connection.
        case addAgain(Exchange)
        /// Has libcurl keep at most this many connections open, and one idle, idle ones closed
        /// before it opens another (while exchanges lack a descriptor, as many as run); `nil`
        /// for its own limits.
        case limitConnections(to: Int?)
    }

    /// The exchanges in libcurl's hands.
    private var running: Set<ObjectIdentifier> = []
    /// Those that have run again on a new connection: never a second time.
    private var retried: Set<ObjectIdentifier> = []
    /// Which may run now, and which wait for their origin.
    private var admission: HostAdmission<Exchange>
    /// Those that no socket could be made for, in the order they came, each waiting for another
    /// to leave libcurl; each keeps its place among its origin's running ones.
    private var waitingForADescriptor: [Exchange] = []
    /// Those that lacked a descriptor with no other running, and run again at once: never a
    /// second time.
    private var triedAloneForADescriptor: Set<ObjectIdentifier> = []
    /// Whether libcurl's connections are limited now.
    private var limitsConnections = false

    /// A loop that runs at most `connectionsPerHost` exchanges at once to one plain-HTTP origin,
    /// and `connections` to all of them together.
    init(connectionsPerHost: Int, connections: Int = HostAdmission<Exchange>.defaultTotalLimit) {
        admission = HostAdmission(limit: connectionsPerHost, totalLimit: connections)
    }

    /// How many exchanges libcurl is running.
    var runningCount: Int { running.count }

    /// Whether nothing runs and nothing waits for a descriptor: a closing loop may end.
    var isIdle: Bool { running.isEmpty && waitingForADescriptor.isEmpty }

    /// The origins whose next exchange would wait for one of theirs to end.
    var fullOrigins: Set<String> { admission.fullOrigins }

    /// Whether every plain-HTTP origin's next exchange would wait: the total is reached.
    var everyOriginFull: Bool { admission.isFull }

    /// A new exchange to `origin` (`nil` for one not counted): it runs now, or waits its turn.
    mutating func start(_ exchange: Exchange, origin: String?) -> [Action] {
        admission.admit(exchange, origin: origin) ? [run(exchange)] : []
    }

    /// The exchange is cancelled: it ends now if it runs or waits, and nothing happens if it has
    /// ended already.
    mutating func cancel(_ exchange: Exchange, origin: String?) -> [Action] {
        if running.remove(ObjectIdentifier(exchange)) != nil {
            forget(exchange)
            return next(after: origin, following: .remove(exchange), .complete(exchange, code: nil))
        }
        if let index = waitingForADescriptor.firstIndex(where: { $0 === exchange }) {
            waitingForADescriptor.remove(at: index)
            forget(exchange)
            var actions: [Action] = [.complete(exchange, code: nil)]
            // The last one waiting gone, libcurl's limit goes too: else it stays until one running
            // ends, which a long one may not for minutes, and the requests after wait for it.
            if waitingForADescriptor.isEmpty, limitsConnections {
                limitsConnections = false
                actions.append(.limitConnections(to: nil))
            }
            guard let next = admission.release(origin: origin) else { return actions }
            return actions + [run(next)]
        }
        if admission.withdraw(exchange, origin: origin) { return [.complete(exchange, code: nil)] }
        return []
    }

    /// libcurl finished the exchange with `code`. When it ended before its request could be
    /// answered and `mayRunAgain` (its connection refused before the request was written, or a
    /// GOAWAY that crossed it), it runs again on a new connection, once. When it
    /// `lackedADescriptor` and others run, here or `elsewhere` (another loop, which then tells
    /// ``descriptorFreedElsewhere()``), it waits for one of them to leave libcurl.
    mutating func finished(_ exchange: Exchange, origin: String?, code: Int32, mayRunAgain: Bool,
                           lackedADescriptor: Bool = false, othersRunElsewhere elsewhere: Bool = false) -> [Action] {
        let id = ObjectIdentifier(exchange)
        guard running.contains(id) else { return [] }
        if mayRunAgain, retried.insert(id).inserted {
            return [.remove(exchange), .addOnNewConnection(exchange)]
        }
        if lackedADescriptor, running.count > 1 || elsewhere {
            running.remove(id)
            waitingForADescriptor.append(exchange)
            return limitingConnections([.remove(exchange)])
        }
        if lackedADescriptor, triedAloneForADescriptor.insert(id).inserted {
            return limitingConnections([.remove(exchange)]) + [.addAgain(exchange)]
        }
        running.remove(id)
        forget(exchange)
        return next(after: origin, following: .remove(exchange), .complete(exchange, code: code))
    }

    /// An exchange of another loop, which one waiting here waited for, has left libcurl: the
    /// first waiting runs again. Nothing, if none waits: one of this loop's own ended first.
    mutating func descriptorFreedElsewhere() -> [Action] {
        guard !waitingForADescriptor.isEmpty else { return [] }
        let again = waitingForADescriptor.removeFirst()
        running.insert(ObjectIdentifier(again))
        return [.addAgain(again)]
    }

    /// libcurl refused to take the exchange (an ``Action/add(_:)`` or
    /// ``Action/addOnNewConnection(_:)``): it ends, and the next waiting for its origin runs.
    mutating func refused(_ exchange: Exchange, origin: String?) -> [Action] {
        guard running.remove(ObjectIdentifier(exchange)) != nil else { return [] }
        forget(exchange)
        return next(after: origin, following: .complete(exchange, code: CurlCode.abortedByCallback))
    }

    /// `actions`, then libcurl told to keep no more connections than exchanges run.
    private mutating func limitingConnections(_ actions: [Action]) -> [Action] {
        limitsConnections = true
        return actions + [.limitConnections(to: max(1, running.count))]
    }

    /// The exchange has ended: nothing of it is kept.
    private mutating func forget(_ exchange: Exchange) {
        retried.remove(ObjectIdentifier(exchange))
        triedAloneForADescriptor.remove(ObjectIdentifier(exchange))
    }

    /// The exchange goes to libcurl.
    private mutating func run(_ exchange: Exchange) -> Action {
        running.insert(ObjectIdentifier(exchange))
        return .add(exchange)
    }

    /// An exchange to `origin` has left libcurl: `actions`, then the first waiting for a
    /// descriptor runs again, and the next one waiting for the origin runs. Appended, not
    /// joined: every request's end comes here, and each array is an allocation.
    private mutating func next(after origin: String?, following actions: Action...) -> [Action] {
        var actions = actions
        if !waitingForADescriptor.isEmpty {
            let again = waitingForADescriptor.removeFirst()
            running.insert(ObjectIdentifier(again))
            actions.append(.addAgain(again))
        } else if limitsConnections {
            limitsConnections = false
            actions.append(.limitConnections(to: nil))
        }
        guard let next = admission.release(origin: origin) else { return actions }
        actions.append(run(next))
        return actions
    }
}
#endif
