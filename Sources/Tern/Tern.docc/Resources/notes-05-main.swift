import Tern

if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
    let session = NotesSession(Credentials(access: "a-1", refresh: "r-1"))
    let notes = NotesAPI(configuration: .notes, session: session)
    let added = try await notes.add("Buy milk").value
    let all = try await notes.notes().value
    print(added.id, all.map(\.text))
}
