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

    /// The attempts in flight now: a stream's until its body ends.
    public var inFlight: Int { count.withLock { $0 } }

    /// Counts an attempt in as it is sent, and out as it ends: a stream's at its end, not its head.
    public func observe(_ event: PluginEvent, api: APIContext) {
        switch event {
        case .willSend: onChange(count.withLock { $0 += 1; return $0 })
        case .didReceive(.success(let response), _) where response.opensStream: break
        case .didReceive, .didEndStream: onChange(count.withLock { $0 -= 1; return $0 })
        case .didRetry, .didRefresh, .didFail: break
        }
    }
}
