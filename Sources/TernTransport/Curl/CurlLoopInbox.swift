#if os(Linux)
/// What other threads hand a ``CurlLoop`` (jobs, exchanges to start and to cancel, closing),
/// and what the loop tells them back, behind the loop's one lock.
struct CurlLoopInbox {
    /// Exchanges started and not yet ended.
    var inFlight = 0
    var jobs: [@Sendable () -> Void] = []
    var starts: [CurlExchange] = []
    var cancels: [CurlExchange] = []
    var isClosing = false
    /// Whether the loop will read the inbox again before it sleeps, so that nothing put in
    /// needs to wake it: while it runs jobs, and while it waits for the next request after
    /// one that ran alone.
    var isAwake = false
    /// When the latest request was put in (uptime nanoseconds).
    var lastArrival: UInt64 = 0
    /// How many times the loop has waited for a next request.
    var lingers = 0
    /// How many times a start woke the loop.
    var startWakeups = 0
    /// How many times the loop found itself marked awake as it was about to sleep; every
    /// path to sleep marks it asleep first, and the tests check that this stays 0.
    var sleepsMarkedAwake = 0
    /// The origins whose next exchange would wait for one of theirs to end, as the loop
    /// last went to sleep: starting one need not wake it, since it wakes when one of theirs
    /// ends (their sockets are among those it waits on), and takes the start then.
    var fullOrigins: Set<String> = []
    /// Whether every plain-HTTP origin was full, the transport's total reached.
    var everyOriginFull = false
    /// How many exchanges libcurl runs, as the loop last said: read by its sibling, whose
    /// exchange lacking a descriptor may wait for one of these to leave libcurl.
    var inLibcurl = 0
    /// The transport's other loop (streams run on their own), if it has one.
    weak var sibling: CurlLoop?
    /// Whether the sibling has an exchange waiting for one of this loop's to leave libcurl.
    var siblingWaits = false
    /// How many times an exchange of the sibling's left libcurl while one here waited for it.
    var descriptorsFreedElsewhere = 0

    /// Whether there is anything for the loop to do.
    var hasWork: Bool { hasWaitingWork || isClosing }
    /// Whether jobs, starts or cancels wait to be taken.
    var hasWaitingWork: Bool { !jobs.isEmpty || !starts.isEmpty || !cancels.isEmpty || descriptorsFreedElsewhere > 0 }
}
#endif
