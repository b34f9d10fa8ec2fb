#if os(Linux)
import CTernCurl

/// The transport's two loops (streams run on their own) as siblings: an exchange of one that
/// finds no descriptor while the other's exchanges hold them waits for one of those to leave
/// libcurl, and the other closes their connections as they end, so that the descriptor freed
/// is one this loop can take. Each loop publishes how many exchanges libcurl runs for it, in
/// its inbox, for the other to read.
extension CurlLoop {
    /// Makes `other` this loop's sibling, and this one `other`'s: an exchange of one that lacks
    /// a descriptor while the other's hold them waits for one of those to end.
    func pair(with other: CurlLoop) {
        inbox.withLock { $0.sibling = other }
        other.inbox.withLock { $0.sibling = self }
    }

    /// An exchange of the sibling's has left libcurl, which one here waited for.
    func descriptorFreedBySibling() {
        let isAwake = inbox.withLock { inbox in
            inbox.descriptorsFreedElsewhere += 1
            return inbox.isAwake
        }
        if !isAwake { _ = curl.pointee.multi_wakeup(multi) }
    }

    /// Whether the sibling runs exchanges, which then say when one leaves libcurl, and close
    /// their connections as they end: the descriptor one frees is then this loop's to take.
    /// Checked and asked under the sibling's lock, which it takes as one leaves libcurl: none
    /// can leave unseen in between.
    func siblingWillFreeADescriptor() -> Bool {
        guard let sibling = inbox.withLock({ $0.sibling }) else { return false }
        let runs = sibling.inbox.withLock { inbox in
            guard inbox.inLibcurl > 0 else { return false }
            inbox.siblingWaits = true
            return true
        }
        if runs { _ = sibling.schedule { [weak sibling] in sibling?.closeConnectionsAsTheyEnd() } }
        return runs
    }

    /// Has libcurl close the connections of the exchanges it runs as they end, instead of
    /// keeping them: the sibling waits for a descriptor.
    func closeConnectionsAsTheyEnd() {
        for easy in byHandle.keys { CurlEasyOptions(curl: curl, easy: easy).setLong(CurlOption.forbidReuse, 1) }
    }

    /// Says in the inbox how many exchanges libcurl runs, for the sibling to read; returns the
    /// sibling if one of its exchanges waits for one of these, and fewer run now: it is to be
    /// told. Published with the lock an end takes anyway, or once after the actions that changed
    /// it: a sibling that read a count not yet lowered waits, and is told when it is.
    func publishRunningCount(_ inbox: inout CurlLoopInbox) -> CurlLoop? {
        let running = state.runningCount
        defer { inbox.inLibcurl = running }
        guard running < inbox.inLibcurl, inbox.siblingWaits else { return nil }
        inbox.siblingWaits = false
        return inbox.sibling
    }
}
#endif
