import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Tern

struct Credentials: Decodable, Sendable {
    let access: String
    let refresh: String
    enum CodingKeys: String, CodingKey { case access = "access_token", refresh = "refresh_token" }   // OAuth's names
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class NotesSession: APIDelegate {
    private let credentials: Mutex<Credentials>

    init(_ credentials: Credentials) {
        self.credentials = Mutex(credentials)
    }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        let access = credentials.withLock { $0.access }
        request.setValue("Bearer \(access)", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        let refresh = credentials.withLock { $0.refresh }
        return Promise { [self] in
            let renewed: Credentials = try await api.request(
                route: .post("/oauth/token"),
                parameters: FormParameters(["grant_type": "refresh_token", "refresh_token": refresh]),
                options: RequestOptions(authenticates: false)).value
            credentials.withLock { $0 = renewed }
        }
    }
}
