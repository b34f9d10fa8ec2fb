import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Changes a request before it is sent: add a header, rewrite the URL, sign it.
///
/// Adapters run in the order given, after the configuration's common headers and before the
/// delegate signs; an error from one stops the request with ``APIError/invalidRequest(_:)``
/// naming it.
///
/// ```swift
/// struct Versioned: RequestAdapter {
///     func adapt(_ request: inout URLRequest) throws {
///         request.setValue("2024-06-01", forHTTPHeaderField: "API-Version")
///     }
/// }
/// APIConfiguration(adapters: [Versioned()])
/// ```
public protocol RequestAdapter: Sendable {
    /// Changes `request`; throw to stop it.
    func adapt(_ request: inout URLRequest) throws
}

/// Several adapters run as one, in the order given; the first error stops the rest. Not public:
/// ``APIConfiguration``'s `adapters` is a list already, run in order.
package struct CompositeAdapter: RequestAdapter {
    /// The adapters, in order.
    package let adapters: [any RequestAdapter]

    /// Creates a composite adapter.
    package init(_ adapters: [any RequestAdapter]) {
        self.adapters = adapters
    }

    /// Runs each adapter in turn.
    package func adapt(_ request: inout URLRequest) throws {
        for adapter in adapters {
            try adapter.adapt(&request)
        }
    }
}
