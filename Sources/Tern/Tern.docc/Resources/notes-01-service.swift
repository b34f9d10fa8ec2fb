import Tern

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
