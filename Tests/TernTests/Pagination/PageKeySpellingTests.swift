import Foundation
import Testing
import Tern
import TernTesting

/// A snake-case body paged by cursor under a parser that converts from snake case. A page's
/// cursor path was read in the body's own keys and its collection path in the decoder's, so
/// that one `pages(…)` needed `.body("issue_page.next_cursor")` beside
/// `collectionKeyPath: "issuePage.items"`; a cursor path written as the decoder reads it found
/// nothing, and paging ended silently after the first page. Each key of either path is now
/// found under either name.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PageKeySpellingTests {
    struct Issue: Decodable, Sendable, Equatable { let issueId: Int }

    static func server() throws -> LoopbackServer {
        try LoopbackServer { request in
            let after = request.queryItems.first { $0.name == "after" }?.value
            return after == "c2"
                ? .json(#"{"issue_page": {"items": [{"issue_id": 3}], "next_cursor": null}}"#)
                : .json(#"{"issue_page": {"items": [{"issue_id": 1}, {"issue_id": 2}], "next_cursor": "c2"}}"#)
        }
    }

    static func snakeCaseParser() -> JSONParser {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return JSONParser(decoder: decoder)
    }

    func ids(cursor: String, collection: String, parser: JSONParser = snakeCaseParser()) async throws -> [Int] {
        let server = try Self.server()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, parser: parser)
        var ids: [Int] = []
        for try await page in api.pages(APIRequest<[Issue]>(.get("/issues")), style: .cursor(parameter: "after", from: .body(cursor)),
                                        collectionKeyPath: collection) {
            ids += page.elements.map(\.issueId)
        }
        return ids
    }

    @Test func bothPathsAsTheDecoderReadsThem() async throws {
        #expect(try await ids(cursor: "issuePage.nextCursor", collection: "issuePage.items") == [1, 2, 3])
    }

    @Test func bothPathsAsTheBodyWritesThem() async throws {
        #expect(try await ids(cursor: "issue_page.next_cursor", collection: "issue_page.items") == [1, 2, 3])
    }

    @Test func eachPathInTheOtherSpelling() async throws {
        #expect(try await ids(cursor: "issuePage.next_cursor", collection: "issue_page.items") == [1, 2, 3])
        #expect(try await ids(cursor: "issue_page.nextCursor", collection: "issuePage.items") == [1, 2, 3])
    }

    /// Without a key strategy, the model reads the body's own names.
    @Test func theBodysNamesWithAPlainDecoder() async throws {
        struct Plain: Decodable, Sendable { let issue_id: Int }
        let server = try Self.server()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, parser: JSONParser())
        var ids: [Int] = []
        for try await page in api.pages(APIRequest<[Plain]>(.get("/issues")), style: .cursor(parameter: "after", from: .body("issue_page.next_cursor")),
                                        collectionKeyPath: "issue_page.items") {
            ids += page.elements.map(\.issue_id)
        }
        #expect(ids == [1, 2, 3])
    }

    /// A parser's own key path, written as the body writes it, under a converting decoder.
    @Test func aParsersKeyPathInTheBodysNames() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let api = try TestAPI(baseURL: server.baseURL, parser: JSONParser(decoder: decoder, keyPath: "issue_page.items"))
        let issues: [Issue] = try await api.request(route: .get("/issues")).value
        #expect(issues == [Issue(issueId: 1), Issue(issueId: 2)])
        // A key under neither name still fails, naming the key as written.
        let missing = try TestAPI(baseURL: server.baseURL, parser: JSONParser(decoder: decoder, keyPath: "issue_page.entries"))
        let error = await apiError(of: missing.request(route: .get("/issues")) as Promise<[Issue]>)
        #expect(error?.caseName == "parsingFailed")
        #expect("\(error.map { "\($0)" } ?? "")".contains("entries"))
    }
}
