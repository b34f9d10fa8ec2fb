import Tern

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
