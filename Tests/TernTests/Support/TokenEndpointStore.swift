import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// A delegate that signs with its bearer token and refreshes it with an unsigned `POST` to
/// `tokenURL`, whose body is the new token: the refresh of the attack suites' raw servers.
final class TokenEndpointStore: APIDelegate {
    let token = Locked("t0")
    let tokenURL: String
    /// The refresh request's own timeout; the API's when `nil`.
    let timeout: TimeInterval?
    /// How long a refresh goes on once its token has come.
    let lingers: TimeInterval

    init(tokenURL: String, timeout: TimeInterval? = nil, lingers: TimeInterval = 0) {
        (self.tokenURL, self.timeout, self.lingers) = (tokenURL, timeout, lingers)
    }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue("Bearer \(token.withLock { $0 })", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        let reply: Promise<String> = api.request(route: .post(tokenURL), options: RequestOptions(timeout: timeout, retryPolicy: .never, authenticates: false))
        let refreshed = reply.map { [self] token in self.token.withLock { $0 = token } }
        return lingers > 0 ? refreshed.delay(lingers) : refreshed
    }

    /// The bearer token a raw request's head carries, or "".
    static func token(in request: String) -> String {
        let line = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("authorization:") }
        return line.map { String($0.dropFirst("authorization:".count)).trimmingCharacters(in: .whitespaces) }?
            .replacingOccurrences(of: "Bearer ", with: "") ?? ""
    }
}
