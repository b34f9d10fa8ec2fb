import Tern

extension APIConfiguration {
    static let notes = APIConfiguration(name: "production", baseURL: "https://notes.example/api")
    static let notesStaging = APIConfiguration(name: "staging", baseURL: "https://staging.notes.example/api", timeout: 20)
}
