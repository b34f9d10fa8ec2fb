import Testing
import Tern
import TernTesting

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
