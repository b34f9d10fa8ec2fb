import TernTransport

/// Where the pipeline handles an exchange's end, which a transport with a thread of its own
/// reports on that thread: the decision is the pipeline's alone, from what it knows of the
/// request and what the transport says of the thread (``ThreadedTransport/caller``).
enum EndPlacement {
    /// Whether the end is handled on the pipeline's queue rather than where it is reported:
    /// never off a transport's own thread; on it, always when what follows calls the app's code
    /// (which may wait for a request only that thread can carry), and for an answer while other
    /// transfers run there, which it would hold up, unless one of the thread's jobs sent it (a
    /// task that prefers the thread, and resumes there anyway) and its body is not read through.
    static func handlesElsewhere(caller: TransportCaller, callsAppCode: Bool, answered: Bool, parses: Bool, sentFromJob: Bool) -> Bool {
        switch caller {
        case .elsewhere: false
        case .job: callsAppCode
        case .loop(let alone): callsAppCode || (answered && !alone && (parses || !sentFromJob))
        }
    }
}
