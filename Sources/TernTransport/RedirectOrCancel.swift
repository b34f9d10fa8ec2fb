/// Which of a URLSession task's two endings came first: Tern's cancel, or its refusal of the
/// task's redirect. FoundationNetworking ends the process if a task is cancelled before the
/// answer to its redirect reaches it ("Received callback for HTTP redirection, but we're not
/// waiting for it"), so only the first happens: a cancelled task's redirect goes unanswered, and
/// its cancel ends it; a task whose redirect was refused is not cancelled, and ends with its 3xx.
struct RedirectOrCancel {
    private(set) var isCancelled = false
    private(set) var isRedirectRefused = false

    /// Whether the task may be cancelled: not once its redirect was refused.
    mutating func cancel() -> Bool {
        guard !isRedirectRefused else { return false }
        isCancelled = true
        return true
    }

    /// Whether the redirect may be answered (refused): not once the task was cancelled.
    mutating func refuseRedirect() -> Bool {
        guard !isCancelled else { return false }
        isRedirectRefused = true
        return true
    }
}
