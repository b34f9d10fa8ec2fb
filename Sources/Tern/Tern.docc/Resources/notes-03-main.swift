import Tern

let notes = NotesAPI(configuration: .notes)
let added = try await notes.add("Buy milk").value
let all = try await notes.notes().value
print(added.id, all.map(\.text))
