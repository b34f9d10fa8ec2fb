import Foundation

extension APIError {
    /// Why a request's credentials could not be made to work.
    public enum AuthenticationFailure: Sendable, CustomStringConvertible {
        /// The delegate's refresh failed, with its own error.
        case refreshFailed(any Error)
        /// The request was replayed with refreshed credentials and was refused again.
        case stillUnauthorized(statusCode: Int)
        /// More refreshes than ``RefreshLimit`` allows: the server keeps refusing new credentials.
        case tooManyRefreshes(limit: Int, window: TimeInterval)
        /// The delegate has no refresh to offer: ``APIDelegate/refreshCredentials(for:)`` is not
        /// implemented, or says so (a delegate with no refresh token left returns this).
        case refreshUnavailable

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .refreshFailed(let error): "The credentials could not be refreshed: \(error)"
            case .stillUnauthorized(let status): "The request was refused again (\(status)) right after the credentials were refreshed."
            case .tooManyRefreshes(let limit, let window): "More than \(limit) credential refreshes within \(window) s: giving up."
            case .refreshUnavailable: "The server refused the credentials, and the API's delegate has none to refresh them with: its refreshCredentials(for:) answered so, or it has none (one written with an APIClient parameter instead of AbstractAPI is another method, never called)."
            }
        }
    }
}
