/// A transport with a thread of its own (``CurlTransport``): the one way the pipeline asks a
/// transport about where its work runs. Nothing about scheduling travels down with a request;
/// the pipeline asks here, and decides.
package protocol ThreadedTransport: Transport {
    /// Runs `work` on the transport's thread if nothing runs there now, before the transfers
    /// it starts, and returns `true`; otherwise runs nothing and returns `false` at once. Called
    /// from a task that prefers the thread (``Transport/taskExecutor``), it runs `work` at once.
    func runIfIdle(_ work: @escaping @Sendable () -> Void) -> Bool

    /// Where the caller runs, as the transport sees it.
    var caller: TransportCaller { get }
}

/// Where code runs, as a transport with a thread of its own sees it.
package enum TransportCaller: Equatable, Sendable {
    /// Not on the transport's threads.
    case elsewhere
    /// On one of them, in a job: a task that prefers the thread, or a request's first stages.
    case job
    /// On one of them as it moves bytes and reports ends; `alone` when no other transfer runs
    /// there, so that work done now holds none up.
    case loop(alone: Bool)
}
