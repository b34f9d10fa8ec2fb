import Foundation

/// How the members of one object are found by name, made once with the object's decoder and
/// kept by it, so that a keyed container holds nothing but that decoder: `KeyedDecodingContainer`'s
/// box copies its container for every key a type asks for, and a copy retained each reference
/// the container held (three, when the lookup lived in it).
struct ObjectMembers {
    /// Members by name, for objects whose names must be compared as strings (escaped or not
    /// ASCII); `nil` when bytes compare.
    let names: [String: Int]?
    /// For a large object whose names compare as bytes, and for every object whose names are
    /// read from snake case: the first member with each hash of its name (converted, from snake
    /// case), by that hash (the index of the name). Building it makes no strings, which a
    /// dictionary of names did for every member of every wide object (80 for a GitHub
    /// repository), whatever few members the type asked for.
    /// Empty for the others; see ``MemberIndex``.
    let hashed: [UInt64]

    /// Nothing to look up: a value that is no object, or a small one searched member by member.
    static let none = ObjectMembers(names: nil, hashed: MemberIndex.none)

    /// Objects up to this size are searched member by member.
    private static var searchedMembers: UInt32 { 16 }

    private init(names: [String: Int]?, hashed: [UInt64]) {
        self.names = names
        self.hashed = hashed
    }

    /// The lookup for the object at `index`, which fails the document where `JSONDecoder` must
    /// decide (names it converts its own way, names crowding one slot).
    init(objectAt index: Int, in tape: JSONTape) {
        let object = tape.values[index]
        let snakeCase = tape.settings.snakeCase
        if snakeCase, object.traits & JSONTape.plainASCIIKeys == 0 { _ = tape.fail() }   // names JSONDecoder converts its way
        guard object.traits & JSONTape.plainASCIIKeys != 0 || snakeCase else {
            var names: [String: Int] = [:]
            names.reserveCapacity(Int(object.first))
            for (name, value) in tape.members(ofObjectAt: index) where names[name] == nil { names[name] = value }
            self.init(names: names, hashed: MemberIndex.none)
            return
        }
        guard object.first > Self.searchedMembers || snakeCase else {
            self = .none
            return
        }
        var hashed = MemberIndex.slots(for: Int(object.first))
        var member = index + 1
        for _ in 0..<object.first {
            let name = tape.span(of: tape.values[member])
            let hash = snakeCase ? SnakeCaseName.hash(name) : NameHash.of(name).hash
            // The first of a name wins, as in JSONDecoder. Names that crowd one slot, or a
            // name not plain, leave the document to it.
            guard let hash, MemberIndex.insert(member, hash: hash, into: &hashed) else {
                _ = tape.fail()
                break
            }
            member = tape.skip(member + 1)
        }
        self.init(names: nil, hashed: hashed)
    }
}

extension JSONTape {
    /// Every member's name and the index of its value, in document order.
    func members(ofObjectAt index: Int) -> [(String, Int)] {
        var member = index + 1
        return (0..<Int(values[index].first)).map { _ in
            defer { member = skip(member + 1) }
            return ((try? string(at: member, path: [])) ?? "", member + 1)
        }
    }
}
