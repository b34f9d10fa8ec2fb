import Foundation
import Synchronization
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The tutorial's code (Tern.docc/Resources/notes-*.swift), compiled and run: `SnippetTests`
// checks that each file appears here line for line. Each stage of the service sits in an enum
// of its own, as the tutorial replaces one file with the next.

extension APIConfiguration {
    static let notes = APIConfiguration(name: "production", baseURL: "https://notes.example/api")
    static let notesStaging = APIConfiguration(name: "staging", baseURL: "https://staging.notes.example/api", timeout: 20)
}

enum TutorialFirstService {
    struct Note: Codable, Sendable, Equatable {
        let id: Int
        let text: String
    }

    struct NotesAPI: Sendable {
        let client: APIClient

        init(configuration: APIConfiguration, transport: (any Transport)? = nil) {
            client = APIClient(configuration: configuration, transport: transport)
        }

        func notes() -> Promise<[Note]> {
            client.request(route: .get("/notes"))
        }

        func add(_ text: String) -> Promise<Note> {
            client.request(route: .post("/notes"), parameters: JSONParameters(["text": text]))
        }

        func delete(_ id: Int) -> Promise<Void> {
            client.request(route: .delete("/notes/\(id)"))
        }
    }

    static func main() async throws {
        let notes = NotesAPI(configuration: .notes)
        let added = try await notes.add("Buy milk").value
        let all = try await notes.notes().value
        print(added.id, all.map(\.text))
    }
}

enum TutorialSignedService {
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

    struct Note: Codable, Sendable, Equatable {
        let id: Int
        let text: String
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    struct NotesAPI: Sendable {
        let client: APIClient
        let session: NotesSession

        init(configuration: APIConfiguration, session: NotesSession, transport: (any Transport)? = nil) {
            client = APIClient(configuration: configuration, transport: transport)
            self.session = session
            client.delegate = session
        }

        func notes() -> Promise<[Note]> {
            client.request(route: .get("/notes"))
        }

        func add(_ text: String) -> Promise<Note> {
            client.request(route: .post("/notes"), parameters: JSONParameters(["text": text]))
        }

        func delete(_ id: Int) -> Promise<Void> {
            client.request(route: .delete("/notes/\(id)"))
        }
    }

    static func main() async throws {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            let session = NotesSession(Credentials(access: "a-1", refresh: "r-1"))
            let notes = NotesAPI(configuration: .notes, session: session)
            let added = try await notes.add("Buy milk").value
            let all = try await notes.notes().value
            print(added.id, all.map(\.text))
        }
    }

    @Suite struct NotesAPITests {
        let stubs = StubTransport()

        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        func makeNotes() -> NotesAPI {
            let session = NotesSession(Credentials(access: "stale", refresh: "r-1"))
            return NotesAPI(configuration: .notes, session: session, transport: stubs)
        }

        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        @Test func notesAreDecoded() async throws {
            stubs.add(Stub(.get, "/api/notes", answers: .json(#"[{"id": 1, "text": "Buy milk"}]"#)))
            let notes = makeNotes()
            #expect(try await notes.notes().value == [Note(id: 1, text: "Buy milk")])
        }

        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        @Test func anExpiredTokenIsRefreshedOnceForEveryWaitingRequest() async throws {
            stubs.add(Stub(.post, "/api/oauth/token", answers: .json(#"{"access_token": "fresh", "refresh_token": "r-2"}"#)))
            stubs.add(Stub(.get, "/api/notes") { request in
                request.headers["Authorization"] == "Bearer fresh" ? .json("[]") : .status(401)
            })
            let notes = makeNotes()
            let answers = try await Promise.all([notes.notes(), notes.notes(), notes.notes()]).value
            #expect(answers == [[], [], []])
            #expect(stubs.requests.filter { $0.path == "/api/oauth/token" }.count == 1)
        }

        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        @Test func aServerErrorIsAnAPIError() async throws {
            stubs.add(Stub(.delete, "/api/notes/*", answers: .status(404)))
            let notes = makeNotes()
            await #expect(throws: APIError.self) { try await notes.delete(7).value }
        }
    }
}
