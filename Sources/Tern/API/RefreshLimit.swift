import Foundation

/// How many refreshes an API allows within a window before it gives up: a guard against a server
/// that refuses every new credential. Refreshes that fail on the network do not count.
public struct RefreshLimit: Sendable, Equatable {
    /// Refreshes allowed within ``window``.
    package var count: Int
    /// Seconds.
    package var window: TimeInterval

    /// Creates a limit; the default is 5 refreshes in 30 s.
    public init(count: Int = 5, window: TimeInterval = 30) {
        self.count = count
        self.window = window
    }
}
