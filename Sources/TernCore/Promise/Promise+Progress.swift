import Dispatch

extension Promise {
    /// Runs `body` as the request this promise comes from sends its body and receives the
    /// response's, with the bytes so far and the total when known. Reports are monotonic per
    /// direction and coalesced: a queue that falls behind gets the latest, not every chunk.
    ///
    /// Steps derived from the promise (`map`, `onSuccess`, …) report the same request's
    /// progress; a promise that comes from no request never reports any.
    ///
    /// ```swift
    /// api.upload(photo)
    ///     .onProgress(in: .main) { progress in print("sent", progress.fractionCompleted ?? 0) }
    ///     .onSuccess { receipt in show(receipt) }
    /// ```
    @discardableResult
    public func onProgress(in queue: DispatchQueue? = nil, _ body: @escaping @Sendable (TransferProgress) -> Void) -> Promise<Value> {
        progress?.observe(on: queue ?? self.queue, body)
        return self
    }

    /// The progress reports of ``onProgress(in:_:)`` as an asynchronous sequence, which ends
    /// when the promise settles.
    ///
    /// ```swift
    /// for await progress in upload.progressUpdates { print(progress.completedBytes) }
    /// ```
    public var progressUpdates: AsyncStream<TransferProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: TransferProgress.self, bufferingPolicy: .bufferingNewest(16))
        // One serial queue, so that the last report is yielded before the stream finishes.
        let queue = DispatchQueue(label: "tern.progress-updates")
        onProgress(in: queue) { continuation.yield($0) }
        onResult(in: queue) { _ in continuation.finish() }
        return stream
    }
}
