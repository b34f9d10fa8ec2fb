#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A redirect Tern refuses to follow names its `Location` in the error's description, and that
/// `Location` is a URL the server wrote: one carrying a password (`http://user:password@host`)
/// shows it in the description, where every other URL in a description has its password hidden.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectFailureLocationPasswordAttackTests {
    static let password = "hunter2-location-secret"

    /// A server whose every answer is a 302 to `location`.
    static func server(location: String) throws -> RawServer {
        try RawServer { connection in
            while connection.readRequest() != nil {
                connection.send(RawServer.Connection.response("moved", status: "302 Found", headers: "Location: \(location)\r\n"))
            }
        }
    }

    /// ResponsesAndErrors.md, "Limits, and what is refused": "Error descriptions are bounded (a
    /// URL is cut at 1,024 characters) and hide a URL's password". A redirect refused as one too
    /// many, or as no http(s) URL, to a `Location` of `http://user:password@…`: the
    /// `redirectFailed` error's description quotes the `Location` as the server wrote it,
    /// password and all (`RedirectFailure.description` puts `quoted(location)` in, not a
    /// described URL), so a log or crash report of the error holds the password.
    @Test(arguments: ["http://user:\(password)@127.0.0.1:1/next", "ftp://user:\(password)@127.0.0.1:1/next"])
    func aRefusedRedirectsDescriptionHidesTheLocationsPassword(location: String) async throws {
        let server = try Self.server(location: location)
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never,
                                                              redirectPolicy: RedirectPolicy(maximumRedirects: 0)))
        do {
            let _: Data = try await api.request(route: .get(server.baseURL + "/start")).value
            Issue.record("the redirect was followed")
        } catch let error as APIError {
            guard case .redirectFailed = error else { Issue.record("expected redirectFailed, got \(error)"); return }
            #expect(!"\(error)".contains(Self.password), "\(error)")
            #expect(!String(describing: error.localizedDescription).contains(Self.password), "\(error.localizedDescription)")
        }
    }
}
#endif
