/// `[String: V]`, read member by member in the document's order. `Dictionary.init(from:)` asks
/// for every key first (a string and a set entry each, to drop repeated names), then looks each
/// one up again by name: twice the work for a type whose values are all dictionaries and lists,
/// as one that reads any JSON value is.
///
/// It keeps what that does: the first member of a name wins (a later one is not decoded), and a
/// value's coding path ends in the key `Dictionary` names it by. Names read from snake case are
/// left to that, which leaves them to `JSONDecoder`.
protocol TapeDecodableDictionary {
    init(membersOf decoder: TapeDecoder) throws
}

extension Dictionary: TapeDecodableDictionary where Key == String, Value: Decodable {
    init(membersOf decoder: TapeDecoder) throws {
        let tape = decoder.tape
        let count = Int(tape.values[decoder.index].first)
        var members: [String: Value] = [:]
        members.reserveCapacity(count)
        var member = decoder.index + 1
        for _ in 0..<count {
            // The scanner makes every name a string.
            let name = (try? tape.string(at: member, path: [])) ?? ""
            if members.index(forKey: name) == nil {
                members[name] = try tape.decode(Value.self, at: member + 1, parent: decoder, key: .name(name))
            }
            member = tape.skip(member + 1)
        }
        self = members
    }
}
