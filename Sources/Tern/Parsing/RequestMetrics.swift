/// What a request did on the wire: each exchange it made, in order, as its transport measured
/// them: retries and redirects first, the one that answered last. At a stream's head, the last
/// is its own so far (no end yet); plugins get the whole at its end
/// (``PluginEvent/didEndStream(_:error:)``).
///
/// ```swift
/// let response: Response = try await client.request(route: .get("/products")).value
/// if let wire = response.metrics.last {
///     print(wire.firstByte ?? 0, wire.reusedConnection ?? false, wire.httpVersion ?? "")
/// }
/// ```
public struct RequestMetrics: Sendable, Equatable {
    /// Each exchange, in order.
    public var transfers: [TransferMetrics]

    /// Metrics of `transfers`.
    public init(transfers: [TransferMetrics] = []) {
        self.transfers = transfers
    }

    /// The exchange that answered: the last.
    public var last: TransferMetrics? { transfers.last }
}
