#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Query and form parameters made from an `Encodable` (`URLParameters(encodable)`,
/// `FormParameters(encodable)`), whose numbers are wider than a `Double` holds exactly: a
/// `UInt64` id past `Int64.max` (Twitter/Snowflake-style ids, hashes) and a `Decimal` amount.
/// The same values in a dictionary are sent exactly; through the `Encodable`, whose JSON is read
/// back as `Int64`, else as `Double`, they went out rounded and in exponent form
/// (`1.8446744073709552e+19`): another id, another amount, silently.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EncodableNumberAttackTests {
    struct Query: Encodable, Sendable {
        let id: UInt64
        let amount: Decimal
    }

    static let id: UInt64 = 18_446_744_073_709_551_615
    static let amount = Decimal(string: "12345678901234567890.25")!

    /// The request target (`/path?query`) and body the server read.
    static func sent(_ parameters: any RequestParameters, method: HTTPMethod) async throws -> (target: String, body: String) {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                connection.send(RawServer.Connection.response("ok"))
            }
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let _: String = try await api.request(route: Route(method: method, url: server.baseURL + "/q"), parameters: parameters).value
        let request = try #require(requests.items.first)
        let target = String(request.split(separator: " ")[1])
        let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (target, body)
    }

    @Test func anEncodablesWideNumbersAreSentAsADictionarysAre() async throws {
        let dictionary = try await Self.sent(URLParameters(["id": Self.id, "amount": Self.amount]), method: .get)
        #expect(dictionary.target == "/q?amount=12345678901234567890.25&id=18446744073709551615", "\(dictionary.target)")
        let encodable = try await Self.sent(URLParameters(Query(id: Self.id, amount: Self.amount)), method: .get)
        #expect(encodable.target == dictionary.target, "URLParameters(encodable) sent \(encodable.target)")
        let form = try await Self.sent(FormParameters(Query(id: Self.id, amount: Self.amount)), method: .post)
        #expect(form.body == "amount=12345678901234567890.25&id=18446744073709551615", "FormParameters(encodable) sent \(form.body)")
    }
}
#endif
