import Foundation
import Testing
@testable import Tern
import TernTesting

/// A `302` that is the answer, with a 5-byte body, `moved`: one without a `Location` (which
/// nothing can follow), or one the app does not follow (`RedirectPolicy.never`, or a policy
/// whose closure says `.doNotFollow`). Its body is the answer's body: the response's (accepted
/// by `.statusCodes(200..<400)`), a download's file's, or the `unacceptableStatus` error's under
/// the default validation.
///
/// RetriesAndRedirects.md: "`RequestOptions(redirectPolicy: .never)` // the 3xx is the
/// response"; RedirectTests' `aRedirectWithoutLocationIsTheResponse`; the README's "never a
/// silently wrong answer". Over libcurl every case holds `moved`, and so does every case with a
/// `Location` over URLSession. Over URLSession a `302` without `Location` comes with no body at
/// all: an empty response body, an empty downloaded file, an error without the server's words,
/// and nothing says a body was dropped (its `Content-Length: 5` notwithstanding). Likely
/// FoundationNetworking's redirect path, which finds no `Location` to follow and ends the task
/// without the bytes it read. Passes over libcurl; over URLSession the four cases without
/// `Location` are left out, and Linux.md's list of FoundationNetworking's failings names it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct UnfollowedRedirectBodyAttackTests {
    enum Use: String, CaseIterable, Sendable {
        case accepted, closure, download, refusedByValidation
    }

    @Test(arguments: Use.allCases, [true, false])
    func aThreeHundredThatIsTheAnswerKeepsItsBody(use: Use, hasLocation: Bool) async throws {
        // FoundationNetworking drops it; Linux.md says so.
        guard hasLocation || TestTransport.keepsBodiesOfRedirectsWithoutLocation else { return }
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                let location = hasLocation ? "Location: /elsewhere\r\n" : ""
                connection.send("HTTP/1.1 302 Found\r\n\(location)Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nmoved")
            }
        }
        defer { server.stop() }
        let accepting = APIConfiguration(timeout: 20, validation: use == .refusedByValidation ? .statusCodes(200..<300) : .statusCodes(200..<400), retryPolicy: .never,
                                         redirectPolicy: use == .closure ? RedirectPolicy(decide: { _ in .doNotFollow }) : .never)
        let api = AbstractAPI(configuration: accepting, transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/old"
        switch use {
        case .accepted, .closure:
            let response: Response = try await api.request(route: .get(url)).value
            #expect(response.statusCode == 302)
            #expect(String(decoding: response.body, as: UTF8.self) == "moved", "the 302's body: \(response.body.count) bytes")
        case .download:
            let destination = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("refused-redirect-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: destination) }
            let file = try await api.download(route: .get(url), to: destination).value
            #expect(file.response.statusCode == 302)
            #expect((try? String(contentsOf: destination, encoding: .utf8)) == "moved", "the file holds the 302's body")
        case .refusedByValidation:
            let error = await apiError(of: api.request(route: .get(url)) as Promise<Data>)
            guard case .unacceptableStatus(let failure)? = error else {
                Issue.record("expected unacceptableStatus, got \(String(describing: error))")
                return
            }
            #expect(failure.statusCode == 302)
            #expect(String(decoding: failure.body, as: UTF8.self) == "moved", "the error's body: \(failure.body.count) bytes")
        }
    }
}
