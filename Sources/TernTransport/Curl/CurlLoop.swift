#if os(Linux)
import CTernCurl
import Foundation

/// A libcurl multi handle and the thread that drives it: every transfer of a transport runs on
/// this one thread, in libcurl's event loop, sharing its connections.
///
/// Other threads only hand it work (an exchange to start, one to cancel, the end) through its
/// inbox, and wake it; everything else is the loop thread's, in ``owned``, which checks the
/// thread in debug builds.
final class CurlLoop: @unchecked Sendable {   // unchecked: it holds libcurl's multi handle, a C pointer
    /// libcurl's functions, as loaded.
    let curl: UnsafePointer<TernCurl>
    /// libcurl's multi handle, which the loop's thread alone drives (others only wake it).
    let multi: UnsafeMutableRawPointer
    let inbox = Locked(CurlLoopInbox())
    /// The most connections to one host libcurl opens.
    private let connectionsPerHost: Int
    /// The most connections libcurl opens to all hosts together, but while exchanges lack a
    /// descriptor.
    private let totalConnections: Int
    /// How many idle connections libcurl keeps for reuse, but while exchanges lack a descriptor.
    private let idleConnections: Int
    /// The loop's thread, which its state and its exchanges' belong to.
    let thread = LoopThread()

    /// What the loop's thread alone reads and changes.
    private struct Owned {
        /// The idle connections, checked before reuse.
        let connections: CurlConnections
        /// Which exchanges run and which wait for their origin.
        var state: CurlLoopState<CurlExchange>
        /// The exchanges in libcurl's hands, by easy handle, to find the one a message names.
        var byHandle: [UnsafeMutableRawPointer: CurlExchange] = [:]
        /// When the loop last began and ended reporting the answer to the only request in
        /// flight, until the next request comes (uptime nanoseconds).
        var answeredAlone: (began: UInt64, ended: UInt64)?
        /// Whether the request that came after the last such answer came within ``lingering``:
        /// the loop waits for the next one only if so, and a caller whose requests come further
        /// apart costs no waiting.
        var nextCameSoon = true
        /// Whether the loop runs jobs now, such as a task's code that prefers its thread.
        var isRunningJobs = false
        /// How many exchanges libcurl runs to each HTTPS origin, which Tern's line leaves to it:
        /// past the cap per host, the next waits in libcurl's line for a connection.
        var runningOverTLS: [String: Int] = [:]
    }

    private var owned: LoopBound<Owned>

    /// The idle connections, checked before reuse; the loop thread's.
    var connections: CurlConnections { owned.value.connections }

    var state: CurlLoopState<CurlExchange> {
        _read { yield owned.value.state }
        _modify { yield &owned.value.state }
    }

    var byHandle: [UnsafeMutableRawPointer: CurlExchange] {
        _read { yield owned.value.byHandle }
        _modify { yield &owned.value.byHandle }
    }

    /// The name of every loop's thread, as the system shows it.
    static let threadName = "tern.curl"

    /// How many idle connections a loop keeps for reuse unless told otherwise.
    static let idleConnections = 32

    /// Whether the caller runs on the loop's thread. What that thread puts in the inbox needs no
    /// wakeup: the loop reads the inbox again before it sleeps (``fallAsleep()``). Only closing
    /// wakes it all the same, since the loop checks for it once a turn, before it moves bytes.
    var isCurrent: Bool { thread.isCurrent }

    /// Whether the caller is one of the loop's jobs: a task that prefers its thread, or a
    /// request's first stages, which the loop took while idle.
    var isRunningJob: Bool { isCurrent && owned.value.isRunningJobs }

    /// Where the caller runs, as the loop sees it: the state it reads is the loop thread's, and
    /// read only there.
    var caller: TransportCaller {
        guard isCurrent else { return .elsewhere }
        return owned.value.isRunningJobs ? .job : .loop(alone: state.runningCount == 0)
    }

    /// How many times the loop has waited for a next request.
    var lingerCount: Int { inbox.withLock { $0.lingers } }

    /// How many times a start woke the loop.
    var startWakeupCount: Int { inbox.withLock { $0.startWakeups } }

    /// How many exchanges were started and have not ended.
    var inFlightCount: Int { inbox.withLock { $0.inFlight } }

    /// The origins the loop last said were full, as it went to sleep.
    var originsFullAtSleep: Set<String> { inbox.withLock { $0.fullOrigins } }

    /// How many times the loop was about to sleep marked awake, which no path should leave it.
    var sleepsMarkedAwakeCount: Int { inbox.withLock { $0.sleepsMarkedAwake } }

    init(curl: UnsafePointer<TernCurl>, connectionsPerHost: Int, totalConnections: Int,
         idleConnections: Int = CurlLoop.idleConnections) throws(CurlUnavailable) {
        guard let multi = curl.pointee.multi_init() else { throw CurlUnavailable(reason: "curl_multi_init failed") }
        // libcurl makes a pair of sockets to be woken by, and goes on without one when the process
        // has no descriptor free: the loop would then wake only as its poll times out, once a
        // second, for the transport's life.
        guard curl.pointee.multi_wakeup(multi) == 0 else {
            _ = curl.pointee.multi_cleanup(multi)
            throw CurlUnavailable(reason: "no descriptor was free for its event loop to be woken by")
        }
        self.curl = curl
        self.multi = multi
        self.connectionsPerHost = connectionsPerHost
        self.totalConnections = max(connectionsPerHost, totalConnections)
        self.idleConnections = idleConnections
        owned = LoopBound(Owned(connections: CurlConnections(curl: curl),
                                state: CurlLoopState(connectionsPerHost: connectionsPerHost, connections: totalConnections)),
                          owner: thread)
        // Idle connections kept for reuse: libcurl's default, four per transfer ever running at
        // once, would keep hundreds of sockets open after a burst.
        tern_curl_multi_setopt_long(curl, multi, CurlMultiOption.maxConnects, idleConnections)
        // Requests past the cap wait in libcurl's queue for a connection to the host to free up.
        tern_curl_multi_setopt_long(curl, multi, CurlMultiOption.maxHostConnections, connectionsPerHost)
        // HTTPS, which `HostAdmission` leaves uncounted (HTTP/2 streams share a connection), is
        // held by libcurl's total: past it a transfer waits for a connection, idle ones closed
        // first. Without it, many HTTPS requests to many hosts ran a process out of descriptors.
        tern_curl_multi_setopt_long(curl, multi, CurlMultiOption.maxTotalConnections, self.totalConnections)
        Thread { [self] in run() }.start()
    }

    /// Starts `exchange` on the loop.
    func start(_ exchange: CurlExchange) {
        let now = DispatchTime.now().uptimeNanoseconds
        let origin = exchange.admissionOrigin
        let onLoop = isCurrent
        let needsWaking = inbox.withLock { inbox in
            inbox.starts.append(exchange)
            inbox.inFlight += 1
            inbox.lastArrival = now
            // With many requests in flight to one host, most would wake the loop only to wait
            // for a connection to it: a wakeup cost a caller's thread a large share of its CPU (a
            // system call, and the other core woken).
            let wouldWait = origin.map { inbox.everyOriginFull || inbox.fullOrigins.contains($0) } ?? false
            guard !inbox.isAwake, !wouldWait, !onLoop else { return false }
            inbox.startWakeups += 1
            return true
        }
        if needsWaking { _ = curl.pointee.multi_wakeup(multi) }
    }

    /// Runs `work` on the loop's thread, before the next transfers are started, if the loop
    /// is idle: a busy loop moves bytes for others, and `work` had better run elsewhere.
    /// Returns whether it took the work.
    func scheduleIfIdle(_ work: @escaping @Sendable () -> Void) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let (taken, isAwake) = inbox.withLock { inbox in
            guard inbox.inFlight == 0, inbox.jobs.isEmpty else { return (false, false) }
            inbox.jobs.append(work)
            inbox.lastArrival = now
            return (true, inbox.isAwake)
        }
        if taken, !isAwake, !isCurrent { _ = curl.pointee.multi_wakeup(multi) }
        return taken
    }

    /// Runs `work` on the loop's thread, after the work before it; returns `false`, running
    /// nothing, once the loop is closing.
    func schedule(_ work: @escaping @Sendable () -> Void) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let (taken, isAwake) = inbox.withLock { inbox in
            guard !inbox.isClosing else { return (false, false) }
            inbox.jobs.append(work)
            inbox.lastArrival = now
            return (true, inbox.isAwake)
        }
        if taken, !isAwake, !isCurrent { _ = curl.pointee.multi_wakeup(multi) }
        return taken
    }

    /// Goes on sending `exchange`'s body, whose reader has bytes again, if libcurl still runs
    /// its transfer: the reader's word can come after the transfer ended (answered early, or
    /// cancelled), when the handle is no longer libcurl's to pause or resume.
    func resumeSending(_ exchange: CurlExchange) {
        _ = schedule { [weak self, weak exchange] in
            guard let self, let exchange, self.byHandle[exchange.easy] === exchange else { return }
            exchange.resumeSending()
        }
    }

    /// Stops `exchange`, which then reports a cancel, unless it has ended already.
    func cancel(_ exchange: CurlExchange) {
        let isAwake = inbox.withLock { inbox in
            inbox.cancels.append(exchange)
            return inbox.isAwake
        }
        if !isAwake, !isCurrent { _ = curl.pointee.multi_wakeup(multi) }
    }

    /// Ends the loop's thread once its transfers have ended.
    func close() {
        inbox.withLock { $0.isClosing = true }
        _ = curl.pointee.multi_wakeup(multi)
    }

    private func run() {
        // Named for the system too (Foundation's name is its own), so tools and tests see it.
        tern_name_this_thread(Self.threadName)
        thread.markCurrent()
        var active: Int32 = 0
        while true {
            // Jobs first: what they send is started in this same turn.
            let (jobs, arrived) = inbox.withLock { inbox in
                defer { inbox.jobs.removeAll() }
                inbox.isAwake = !inbox.jobs.isEmpty
                let arrived = inbox.jobs.isEmpty && inbox.starts.isEmpty ? nil : inbox.lastArrival
                return (inbox.jobs, arrived)
            }
            if let arrived, let answered = owned.value.answeredAlone {
                owned.value.nextCameSoon = Self.cameSoon(arrived, afterReportBegan: answered.began, ended: answered.ended)
                owned.value.answeredAlone = nil
            }
            owned.value.isRunningJobs = true
            for job in jobs { job() }
            owned.value.isRunningJobs = false
            // From here on what is put in wakes the loop; jobs put in while it ran the others did
            // not, and are run next turn.
            let (isClosing, jobsWaiting, reportBegan) = CurlLibrary.exitWaits {
                let (isClosing, jobsWaiting) = startAndCancel()
                _ = curl.pointee.multi_perform(multi, &active)
                return (isClosing, jobsWaiting, finishDone())
            }
            if let reportBegan { owned.value.answeredAlone = (reportBegan, DispatchTime.now().uptimeNanoseconds) }
            if isClosing, state.isIdle, inbox.withLock({ $0.starts.isEmpty && $0.jobs.isEmpty }) { break }
            if jobsWaiting || (reportBegan != nil && owned.value.nextCameSoon && lingerForWork()) { continue }
            if fallAsleep() { continue }
            _ = curl.pointee.multi_poll(multi, nil, 0, 1000, nil)
        }
    }

    /// Starts and cancels what the inbox holds; returns whether the loop is closing and whether
    /// jobs wait. The inbox's exchanges are let go of here, not held while the loop sleeps: one
    /// that ended gives its easy handle back as soon as nothing else holds it.
    private func startAndCancel() -> (isClosing: Bool, jobsWaiting: Bool) {
        let work = inbox.withLock { inbox in
            defer {
                inbox.starts.removeAll()
                inbox.cancels.removeAll()
                inbox.descriptorsFreedElsewhere = 0
                inbox.isAwake = false
            }
            return (starts: inbox.starts, cancels: inbox.cancels, freedElsewhere: inbox.descriptorsFreedElsewhere,
                    isClosing: inbox.isClosing, jobsWaiting: !inbox.jobs.isEmpty)
        }
        for exchange in work.starts {
            let actions = state.start(exchange, origin: exchange.admissionOrigin)
            if actions.isEmpty { exchange.waitsForConnection() }
            perform(actions)
        }
        for exchange in work.cancels { perform(state.cancel(exchange, origin: exchange.admissionOrigin)) }
        for _ in 0..<work.freedElsewhere { perform(state.descriptorFreedElsewhere()) }
        return (work.isClosing, work.jobsWaiting)
    }

    /// Frees libcurl's handle once nothing can wake it: the thread has ended, and no task that
    /// could still be cancelled holds the loop.
    deinit {
        _ = CurlLibrary.exitWaits { curl.pointee.multi_cleanup(multi) }
    }

    /// Runs what the state asks of libcurl. Ends are reported at once, whatever ended them
    /// (libcurl, a cancel, libcurl's refusal): the receiver knows what it does then, and asks
    /// ``caller`` whether to do it here. Returns whether it reported a finished transfer that
    /// ran alone.
    @discardableResult
    private func perform(_ actions: [CurlLoopState<CurlExchange>.Action], finished: Bool = false) -> Bool {
        var finishedAlone = false
        // Whether an exchange went to or left libcurl since the count was last published.
        var countChanged = false
        defer {
            if countChanged { inbox.withLock(publishRunningCount)?.descriptorFreedBySibling() }
        }
        for action in actions {
            switch action {
            case .add(let exchange):
                add(exchange)
                countChanged = true
            case .addOnNewConnection(let exchange):
                if exchange.useNewConnection() {
                    add(exchange)
                    countChanged = true
                } else {
                    perform(state.refused(exchange, origin: exchange.admissionOrigin))
                }
            case .addAgain(let exchange):
                if exchange.readyToRunAgain() {
                    add(exchange)
                    countChanged = true
                } else {
                    perform(state.refused(exchange, origin: exchange.admissionOrigin))
                }
            case .limitConnections(let limit):
                tern_curl_multi_setopt_long(curl, multi, CurlMultiOption.maxConnects, limit == nil ? idleConnections : 1)
                tern_curl_multi_setopt_long(curl, multi, CurlMultiOption.maxTotalConnections, limit ?? totalConnections)
            case .remove(let exchange):
                _ = curl.pointee.multi_remove_handle(multi, exchange.easy)
                exchange.leftLibcurl()
                countChanged = true
                if let origin = exchange.tlsOrigin {
                    let running = owned.value.runningOverTLS[origin, default: 1] - 1
                    owned.value.runningOverTLS[origin] = running > 0 ? running : nil   // no entry kept per origin ever seen
                }
            case .complete(let exchange, let code):
                byHandle[exchange.easy] = nil
                let waiting = inbox.withLock { inbox in
                    inbox.inFlight -= 1
                    return publishRunningCount(&inbox)
                }
                countChanged = false
                waiting?.descriptorFreedBySibling()
                if finished, state.runningCount == 0 {
                    if owned.value.nextCameSoon { inbox.withLock { $0.isAwake = true } }
                    finishedAlone = true
                }
                exchange.complete(code)
            }
        }
        return finishedAlone
    }

    /// Hands `exchange` to libcurl; one libcurl refuses ends at once.
    private func add(_ exchange: CurlExchange) {
        exchange.leftTheLine()
        exchange.noteHandedOver()
        if curl.pointee.multi_add_handle(multi, exchange.easy) == 0 {
            byHandle[exchange.easy] = exchange
            // libcurl holds the line for HTTPS: past the cap, this one may wait in it, until a
            // connection is chosen for it (HTTP/2 shares one at once), so that a timeout meanwhile
            // can say it waited.
            if let origin = exchange.tlsOrigin {
                let running = owned.value.runningOverTLS[origin, default: 0] + 1
                owned.value.runningOverTLS[origin] = running
                if running > connectionsPerHost { exchange.waitsForConnection() }
            }
        } else {
            perform(state.refused(exchange, origin: exchange.admissionOrigin))
        }
    }

    /// Reports every transfer libcurl has finished: at once when it was the only one, which
    /// spares a sequential caller a thread hop. Returns when it began reporting the only one
    /// (uptime nanoseconds), or `nil`: a next request that comes before the report ends is
    /// timed from then, since a busy machine may delay the report past it (the loop then took a
    /// request sent long after for one that came at once). When the loop is to wait for a next
    /// request after that, it is marked awake first, since the caller may send the next one
    /// before the report returns; ``lingerForWork()`` marks it asleep again.
    private func finishDone() -> UInt64? {
        var answeredAlone: UInt64?
        var queued: Int32 = 0
        while let message = curl.pointee.multi_info_read(multi, &queued) {
            var easy: UnsafeMutableRawPointer?
            var result: Int32 = 0
            guard tern_curl_message_done(message, &easy, &result) == 1, let easy, let exchange = byHandle[easy] else { continue }
            // Before the handle leaves the multi handle, which alone can still name its socket.
            connections.transferEnded(on: easy)
            let lacked = exchange.lackedADescriptor(after: result)
            // Until it is handed to libcurl again, the idle timeout does not give it up.
            if lacked { exchange.waitsForADescriptor() }
            let actions = state.finished(exchange, origin: exchange.admissionOrigin, code: result,
                                         mayRunAgain: exchange.mayRunAgain(after: result), lackedADescriptor: lacked,
                                         othersRunElsewhere: lacked && state.runningCount == 1 && siblingWillFreeADescriptor())
            let reporting = DispatchTime.now().uptimeNanoseconds
            if perform(actions, finished: true) { answeredAlone = reporting }
        }
        return answeredAlone
    }
}
#endif
