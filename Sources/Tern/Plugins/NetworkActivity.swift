import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Counts the requests in flight, on every platform: what Opera's and TRON's iOS-only activity
/// indicators did, for a spinner, a status line or a metric.
///
/// ```swift
/// let activity = NetworkActivity { count in DispatchQueue.main.async { spinner.isHidden = count == 0 } }
/// let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", plugins: [activity]))
/// ```
public final class NetworkActivity: Plugin {
    private let count = Locked(0)
    private let onChange: @Sendable (Int) -> Void

    /// Creates a counter; `onChange` gets each new count, on a background thread.
    public init(onChange: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.onChange = onChange
    }

    /// The attempts in flight now.
    public var inFlight: Int { count.withLock { $0 } }

    /// Counts the attempt in.
    public func willSend(_ request: URLRequest, api: APIContext) {
        onChange(count.withLock { $0 += 1; return $0 })
    }

    /// Counts the attempt out.
    public func didReceive(_ result: Result<Response, APIError>, for request: URLRequest, api: APIContext) {
        onChange(count.withLock { $0 -= 1; return $0 })
    }
}
