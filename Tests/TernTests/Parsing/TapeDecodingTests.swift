import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The tape decoder against `JSONDecoder` itself: wherever the tape gives a value it is the one
/// `JSONDecoder` gives, and whatever `JSONDecoder` refuses the tape leaves to it.
@Suite(.onTestThreads) struct TapeDecodingTests {
    /// Checks the invariant on one document, and returns whether the tape decoded it.
    @discardableResult
    func agree<T: Decodable & Equatable>(
        _ type: T.Type, _ json: String, decoder: JSONDecoder = JSONDecoder(), sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        agree(type, Data(json.utf8), decoder: decoder, sourceLocation: sourceLocation)
    }

    @discardableResult
    func agree<T: Decodable & Equatable>(
        _ type: T.Type, _ data: Data, decoder: JSONDecoder = JSONDecoder(), sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        let byTape = decoder.decodedByTape(type, from: data)
        let byFoundation = Result { try decoder.decode(type, from: data) }
        let faster = Result { try decoder.decodeFaster(type, from: data) }
        switch byFoundation {
        case .success(let expected):
            if let byTape { #expect(byTape == expected, sourceLocation: sourceLocation) }
            #expect((try? faster.get()) == expected, sourceLocation: sourceLocation)
        case .failure(let expected):
            #expect(byTape == nil, "the tape decoded what JSONDecoder refuses: \(expected)", sourceLocation: sourceLocation)
            #expect(String(describing: faster) == String(describing: byFoundation), sourceLocation: sourceLocation)
        }
        return byTape != nil
    }

    struct Item: Codable, Equatable {
        let id: Int
        let name: String
        let price: Double
        let tags: [String]
        var note: String?
    }

    @Test func decodesWhatJSONDecoderDecodes() {
        #expect(agree([Item].self, #"[{"id":1,"name":"tern","price":1.5,"tags":["a","b"]},{"price":3,"tags":[],"name":"gull","id":-2,"note":null}]"#))
        #expect(agree([Item].self, " \n[ {\"id\" : 1 , \"name\":\"x\",\"price\":1e2,\"tags\":[\"\"],\"note\":\"n\"} ]\t"))
        #expect(agree([String: Int].self, #"{"b":2,"a":1,"":0}"#))
        #expect(agree([Int: String].self, #"{"1":"one","22":"two"}"#))
        #expect(agree([[Int?]].self, "[[1,null],[],[null]]"))
        // Arrays are read at their full length at once; other collections as they read themselves.
        #expect(agree([String: [[Item]]].self, #"{"a":[[{"id":1,"name":"x","price":2,"tags":["t"]}],[]],"b":[]}"#))
        #expect(agree(Set<Int>.self, "[3,1,2,3]"))
        #expect(agree(ContiguousArray<String>.self, #"["a","b"]"#))
        #expect(!agree([Int].self, #"{"0":1}"#))
        #expect(agree([Int].self, "[1,-2,0,9223372036854775807]"))
        #expect(agree([Double].self, "[1.5,-0,1e300,2,-0.0]"))
        #expect(agree([String].self, #"["a","\u00e9",""]"#))
        #expect(!agree([Int].self, "[1,2.5]"))
        #expect(!agree([String].self, #"["a",1]"#))
        #expect(agree(Int?.self, "null"))
        #expect(agree(String.self, #""fragment""#))
        #expect(agree(Bool.self, "true"))
        #expect(agree([Int8].self, "[127,-128,0]"))
        #expect(agree([UInt64].self, "[18446744073709551615,0]"))
        #expect(agree([Int64].self, "[9223372036854775807,-9223372036854775808]"))
    }

    @Test func readsStringsAsJSONDecoderDoes() {
        let texts = [#""plain""#, #""tab\tquote\"slash\/back\\""#, #""\u00e9\u0000\b\f\n\r""#, #""\ud83d\ude00 and é and 𝄞""#, #""""#]
        for text in texts { #expect(agree(String.self, text)) }
    }

    @Test func readsNumbersAsJSONDecoderDoes() {
        let doubles = ["0", "-0", "-0.0", "0.1", "1.5", "123.456", "1e-7", "2.5E+3", "123456789012345678", "0.30000000000000004",
                       "1.7976931348623157e308", "5e-324", "99999999999999999999", "0.000000000000000000001", "1234567.8901234"]
        for number in doubles { #expect(agree(Double.self, number)) }
        for number in ["3.4028235e38", "1.17549435e-38", "0.1", "16777217"] { #expect(agree(Float.self, number)) }
        for number in ["1e400", "-1e400", "1e-400", "0.0e-400"] { agree(Double.self, number) }
        // Zeros with exponents, which JSONDecoder checks in an order of its own: it refuses `0e6`.
        let zeros = ["0e6", "0E0", "0e-1", "-0E1", "0.0E6", "0.00e5", "0e12", "0.0e1", "0e+15", "0.000e-9", "-0.0000e99"]
        for number in zeros {
            agree(Double.self, number)
            agree(Float.self, number)
        }
        // JSONDecoder reads these integers its own way; the tape leaves them to it.
        for number in ["1.0", "1e2", "-0", "128", "1.5"] { #expect(!agree(Int8.self, number)) }
        #expect(!agree(UInt.self, "-1"))
    }

    /// Strings of random bytes and escapes, valid or not, as values and as keys.
    @Test func randomStringsReadAlike() {
        var generator = SplitMix(seed: 0x5721)
        let pieces: [[UInt8]] = [[0x61], [0x20], [0x7F], [0x00], [0x1F], [0x09], [0xC3, 0xA9], [0xC3], [0xA9], [0xE2, 0x82, 0xAC], [0xED, 0xA0, 0x80],
                                 [0xF0, 0x9F, 0x98, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF], [0xFF], Array(#"\n"#.utf8), Array(#"\""#.utf8),
                                 Array(#"\/"#.utf8), Array(#"\x"#.utf8), Array(#"\u00e9"#.utf8), Array(#"\u0000"#.utf8), Array(#"\uD83D\uDE00"#.utf8),
                                 Array(#"\ud83d"#.utf8), Array(#"\uDE00"#.utf8), Array(#"\uD83Dx"#.utf8), Array(#"\u12"#.utf8), Array(#"\uFFFF"#.utf8), [0x5C]]
        var decodedByTape = 0
        for round in 0..<4_000 {
            // A quarter long enough to be read eight bytes at a time.
            let count = round % 4 == 0 ? Int.random(in: 6...40, using: &generator) : Int.random(in: 0...5, using: &generator)
            let text = (0..<count).flatMap { _ in
                Bool.random(using: &generator) ? Array("abcdefgh".utf8.prefix(Int.random(in: 1...8, using: &generator)))
                                               : pieces.randomElement(using: &generator)!
            }
            if agree(String.self, Data([0x22] + text + [0x22])) { decodedByTape += 1 }
            agree([String: Int].self, Data(Array(#"{""#.utf8) + text + Array(#"":1}"#.utf8)))
        }
        #expect(decodedByTape > 400)
    }

    /// Numbers of every shape JSON allows, read as each numeric type.
    @Test func randomNumbersReadAlike() {
        var generator = SplitMix(seed: 0x1234)
        var (doublesByTape, integersByTape) = (0, 0)
        for _ in 0..<2_000 {
            let digits = { (count: Int) in (0..<count).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined() }
            let sign = Bool.random(using: &generator) ? "-" : ""
            let whole = Int.random(in: 0...3, using: &generator) == 0 ? "0" : String(Int.random(in: 1...9, using: &generator)) + digits(Int.random(in: 0...24, using: &generator))
            let fraction = Bool.random(using: &generator) ? "" : "." + digits(Int.random(in: 1...24, using: &generator))
            let exponent = Bool.random(using: &generator) ? "" : ["e", "E"].randomElement(using: &generator)! + ["", "+", "-"].randomElement(using: &generator)! + digits(Int.random(in: 1...3, using: &generator))
            let number = sign + whole + fraction + exponent
            if agree(Double.self, number) { doublesByTape += 1 }
            agree(Float.self, number)
            if agree(Int.self, number) { integersByTape += 1 }
            agree(Int8.self, number)
            agree(UInt64.self, number)
            agree(Decimal.self, number)
        }
        #expect(doublesByTape > 1_000 && integersByTape > 100, "the tape read \(doublesByTape) doubles, \(integersByTape) integers")
    }

    @Test func readsDecimalsAsJSONDecoderDoes() {
        var generator = SplitMix(seed: 0xDEC)
        let fixed = ["0", "-0", "1.25", "-3.000", "0.1", "123456789012345678901234567890123456789", "1234567890.12345678901234567890123456789",
                     "0.00000000000000000000000000000000000000000000001", String(repeating: "9", count: 160)]
        let random = (0..<300).map { _ in
            let digits = { (count: Int) in (0..<count).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined() }
            let whole = Bool.random(using: &generator) ? "0" : String(Int.random(in: 1...9, using: &generator)) + digits(Int.random(in: 0...30, using: &generator))
            let fraction = Bool.random(using: &generator) ? "" : "." + digits(Int.random(in: 1...30, using: &generator))
            return (Bool.random(using: &generator) ? "-" : "") + whole + fraction
        }
        #expect((fixed + random).filter { agree(Decimal.self, $0) }.count == fixed.count + random.count)
        #expect(agree([Decimal].self, "[1.25, -7, 0.001]"))
        #expect(!agree(Decimal.self, "1e3"), "exponents are JSONDecoder's to read")
    }

    @Test func leavesWhatItDoesNotReadToJSONDecoder() {
        let documents = ["", " ", "[1,]", #"{"a":1,}"#, "[01]", "[1.]", "[.5]", "[+1]", "[NaN]", #"["unterminated"#, "[1] x", "[1]]",
                         "\u{FEFF}[1]", "[tru]", "nul", #"["\ud800"]"#, #"["\udc00"]"#, #"["\x"]"#, "[\"a\u{01}\"]", "{1:2}", "[1 2]"]
        for document in documents { #expect(!agree([Int].self, document)) }
        #expect(!agree([String].self, Data([0x5B, 0x22, 0xC3, 0x28, 0x22, 0x5D])))
        #expect(!agree([String].self, Data([0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D])))
        #expect(!agree([Int].self, "[1,2]".data(using: .utf16)!))
        let nested = { (depth: Int) in String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        #expect(agree(Nested.self, nested(512)), "JSONDecoder's deepest")
        #expect(!agree(Nested.self, nested(513)))
        #expect(!agree(Nested.self, nested(100_000)))
    }

    /// 128-bit integers, read under `try?`: the tape leaves them to JSONDecoder, which reads them.
    struct Wide: Decodable, Equatable {
        let signed: Int128?
        let unsigned: UInt128?
        let list: [Int128]?

        init(signed: Int128?, unsigned: UInt128?, list: [Int128]?) {
            (self.signed, self.unsigned, self.list) = (signed, unsigned, list)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            signed = try? container.decode(Int128.self, forKey: .signed)
            unsigned = try? container.decode(UInt128.self, forKey: .unsigned)
            var elements = try container.nestedUnkeyedContainer(forKey: .list)
            var list: [Int128] = []
            while !elements.isAtEnd, let element = try? elements.decode(Int128.self) { list.append(element) }
            self.list = list.isEmpty ? nil : list
        }

        enum CodingKeys: CodingKey { case signed, unsigned, list }
    }

    @Test func leavesWideIntegersToJSONDecoder() throws {
        #expect(!agree(Wide.self, #"{"signed":-170141183460469231731687303715884105728,"unsigned":340282366920938463463374607431768211455,"list":[1,-2]}"#))
        #expect(!agree(Int128.self, "12345678901234567890123"))
        let wide = try JSONDecoder().decodeFaster(Wide.self, from: Data(#"{"signed":-5,"unsigned":7,"list":[1]}"#.utf8))
        #expect(wide == Wide(signed: -5, unsigned: 7, list: [1]))
    }

    /// JSONDecoder keeps either value of two names for one key, from one call to the next (it
    /// walks the object in its dictionary's order): the tape leaves such a document to it, and
    /// whatever it keeps is the answer. (Compared with a second call of JSONDecoder's own, this
    /// failed under the address sanitizer, whose allocations move that order.)
    @Test func leavesTwoNamesForOneIntegerKeyToJSONDecoder() throws {
        let twoNames = Data(#"{"1":"a","01":"b"}"#.utf8)
        #expect(JSONDecoder().decodedByTape([Int: String].self, from: twoNames) == nil)
        #expect([[1: "a"], [1: "b"]].contains(try JSONDecoder().decodeFaster([Int: String].self, from: twoNames)))
        #expect(agree([Int: String].self, #"{"1":"a","2":"b"}"#))
    }

    /// A type that keeps its decoder, to read from it once decoding has returned.
    final class Keeper: Decodable, @unchecked Sendable {
        let decoder: any Decoder
        init(from decoder: any Decoder) throws { self.decoder = decoder }
    }

    @Test func aDecoderKeptPastDecodingThrowsDecodingErrors() throws {
        let keeper = try #require(JSONDecoder().decodedByTape(Keeper.self, from: Data(#"{"name":"x","super":{"id":1}}"#.utf8)))
        let container = try keeper.decoder.container(keyedBy: AnyKey.self)
        #expect(try container.decode(String.self, forKey: AnyKey("name")) == "x")
        #expect(throws: DecodingError.self) { try container.decode(Int.self, forKey: AnyKey("name")) }
        #expect(throws: DecodingError.self) { try container.superDecoder().container(keyedBy: AnyKey.self).decode(String.self, forKey: AnyKey("id")) }
    }

    struct AnyKey: CodingKey {
        let stringValue: String
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Arrays in arrays, as deep as the document goes.
    indirect enum Nested: Decodable, Equatable {
        case list([Nested])
        init(from decoder: any Decoder) throws { self = .list(try [Nested](from: decoder)) }
    }

    @Test func errorsAreJSONDecodersOwn() {
        #expect(!agree(Item.self, #"{"id":"1","name":"x","price":1,"tags":[]}"#))
        #expect(!agree(Item.self, #"{"name":"x","price":1,"tags":[]}"#))
        #expect(!agree(Item.self, #"{"id":null,"name":"x","price":1,"tags":[]}"#))
        #expect(!agree([Item].self, #"[{"id":1,"name":"x","price":1,"tags":[2]}]"#))
        #expect(!agree(Bool.self, "1"))
    }

    /// A type that swallows an error: the tape must not keep a value made after one.
    struct Lenient: Decodable, Equatable {
        let count: Int
        enum CodingKeys: CodingKey { case count }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let count = try? container.decode(Int.self, forKey: .count) {
                self.count = count
            } else {
                count = Int(try container.decode(Double.self, forKey: .count))
            }
        }
    }

    @Test func aCaughtErrorSendsTheDocumentToJSONDecoder() {
        #expect(!agree(Lenient.self, #"{"count":2.0}"#))
        #expect(agree(Lenient.self, #"{"count":2}"#))
    }

    /// A type that reads optional members with `try?`, and keeps what each read threw.
    struct Forgiving: Decodable, Equatable {
        let name: String?
        let count: Int?
        let small: UInt8?
        let ratio: Double?
        let weight: Float?
        let flag: Bool?
        let errors: [String]
        enum CodingKeys: String, CodingKey { case name, count, small, ratio, weight, flag }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            var errors: [String] = []
            func attempt<T>(_ read: () throws -> T) -> T? {
                do { return try read() } catch { errors.append(String(describing: error)); return nil }
            }
            name = attempt { try container.decode(String.self, forKey: .name) }
            count = attempt { try container.decode(Int.self, forKey: .count) }
            small = attempt { try container.decode(UInt8.self, forKey: .small) }
            ratio = attempt { try container.decode(Double.self, forKey: .ratio) }
            weight = attempt { try container.decode(Float.self, forKey: .weight) }
            flag = attempt { try container.decode(Bool.self, forKey: .flag) }
            self.errors = errors
        }
    }

    @Test func aNullCaughtByTheTypeStaysTheTapesWithJSONDecodersError() {
        let nulls = #"[{"name":null,"count":null,"small":null,"ratio":null,"weight":null,"flag":true},{"name":"a","count":1,"small":2,"ratio":0.5,"weight":1.5,"flag":false}]"#
        // The errors the type kept are part of its value: they must be JSONDecoder's, word for word.
        #expect(agree([Forgiving].self, nulls))
        let decoded = JSONDecoder().decodedByTape([Forgiving].self, from: Data(nulls.utf8))
        #expect(decoded?.first?.errors.count == 5)
        // A null Bool is a type mismatch in JSONDecoder, not a missing value: the tape throws
        // that too, word for word, and keeps the document.
        #expect(agree([Forgiving].self, #"[{"name":"a","count":1,"small":2,"ratio":0.5,"weight":1.5,"flag":null}]"#))
    }

    @Test func namesFromSnakeCaseAreReadAsJSONDecoderReadsThem() {
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        struct Repository: Decodable, Equatable {
            let id: Int
            let htmlUrl: String
            let stargazersCount: Int
            let sha256Sum: String?
            let license: License?
            struct License: Decodable, Equatable { let spdxId: String? }
        }
        let members = (0..<30).map { "\"extra_\($0 % 7 == 0 ? "x" : "y")_field\($0)\":\($0)" }.joined(separator: ",")
        let plain = #"{"id":1,"html_url":"https://x","stargazers_count":3,"sha256_sum":"ab","license":{"spdx_id":"MIT"}}"#
        #expect(agree(Repository.self, plain, decoder: snake))
        #expect(snake.decodedByTape(Repository.self, from: Data(plain.utf8)) != nil)
        let wide = #"{"id":1,"html_url":"https://x","stargazers_count":3,"#.dropLast() + "," + members + "}"
        #expect(agree(Repository.self, String(wide), decoder: snake))
        #expect(snake.decodedByTape(Repository.self, from: Data(wide.utf8)) != nil)
        #expect(agree(Repository.self, #"{"id":1,"html_url":"a","html_url":"b","stargazers_count":3}"#, decoder: snake))
        // A dictionary's keys are not converted by JSONDecoder; what enumerates keys is its.
        #expect(!agree([String: Int].self, #"{"a_b":1,"c":2,"long_name_here":3}"#, decoder: snake))
        #expect(!agree([[String: Int]].self, #"[{"a_b":1},{"a_b":2,"a_b":3}]"#, decoder: snake))
        // Names JSONDecoder converts by rules of its own are left to it.
        struct Odd: Decodable, Equatable { let x1st: Int?; let x1St: Int?; let aB: Int?; let a: Int? }
        for odd in [#"{"x_1st":1}"#, #"{"_a":1}"#, #"{"a_":1}"#, #"{"a__b":1}"#, #"{"A_B":1}"#, #"{"a_b":1,"aB":2}"#, #"{"a-b":1}"#] {
            #expect(!agree(Odd.self, odd, decoder: snake), "\(odd)")
        }
        #expect(agree(Odd.self, #"{"a_b":4,"a":5}"#, decoder: snake))
    }

    @Test func keysMatchAsJSONDecoderMatchesThem() {
        struct Keys: Decodable, Equatable { let id: Int; let K: Int? }
        #expect(agree(Keys.self, #"{"id":1,"id":2}"#))
        #expect(agree(Keys.self, #"{"\u0069d":3}"#))
        #expect(agree(Keys.self, "{\"id\":1,\"\u{212A}\":7}"))
        #expect(agree(Keys.self, #"{"id":1,"K":null}"#))
        let wide = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(agree(Keys.self, "{\(wide),\"id\":5,\"id\":6,\"K\":1}"))
        #expect(agree([String: Int].self, "{\(wide),\"k3\":99}"))
    }

    /// What a type saw of its decoder: its coding path and the keys the object offered.
    struct Witness: Decodable, Equatable {
        let path: [String]
        let keys: [String]
        let inner: [Inner]
        struct Inner: Decodable, Equatable {
            let path: [String]
            init(from decoder: any Decoder) throws { path = decoder.codingPath.map(\.stringValue) }
        }
        enum CodingKeys: String, CodingKey { case inner, a, b }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = container.codingPath.map(\.stringValue)
            keys = container.allKeys.map(\.stringValue).sorted()
            inner = try container.decode([Inner].self, forKey: .inner)
        }
    }

    @Test func codingPathsAndKeysAreJSONDecoders() {
        #expect(agree([String: Witness].self, #"{"w":{"a":1,"b":2,"a":3,"c":4,"inner":[{},{}]}}"#))
    }

    /// Records what an unkeyed container reports as it goes.
    struct Walk: Decodable, Equatable {
        var steps: [String] = []
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            steps.append("count \(container.count ?? -1)")
            while !container.isAtEnd {
                if try container.decodeNil() { steps.append("nil at \(container.currentIndex)"); continue }
                steps.append("\(try container.decodeIfPresent(Int.self) ?? -1)")
            }
            steps.append("\(String(describing: try container.decodeIfPresent(String.self))) \(container.currentIndex) \(container.isAtEnd)")
        }
    }

    @Test func unkeyedContainersCountAsJSONDecodersDo() {
        #expect(agree(Walk.self, "[1,null,2]"))
        #expect(agree(Walk.self, "[]"))
    }

    class Animal: Decodable, Equatable {
        let name: String
        static func == (lhs: Animal, rhs: Animal) -> Bool { lhs.name == rhs.name }
    }

    final class Bird: Animal, @unchecked Sendable {
        let wings: Int
        enum CodingKeys: CodingKey { case wings }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            wings = try container.decode(Int.self, forKey: .wings)
            try super.init(from: container.superDecoder())
        }
        static func == (lhs: Bird, rhs: Bird) -> Bool { lhs.name == rhs.name && lhs.wings == rhs.wings }
    }

    @Test func superDecodersReadTheirKey() {
        #expect(agree(Bird.self, #"{"wings":2,"super":{"name":"tern"}}"#))
        #expect(!agree(Bird.self, #"{"wings":2}"#))
    }

    @Test func datesAndURLsFollowTheDecodersStrategy() {
        for strategy in [JSONDecoder.DateDecodingStrategy.deferredToDate, .secondsSince1970, .millisecondsSince1970] {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = strategy
            #expect(agree([Date].self, "[0, 1700000000.5, -12]", decoder: decoder))
        }
        #expect(agree([URL].self, #"["https://example.com/a?b=c", "relative/path"]"#))
        #expect(!agree([URL].self, #"[""]"#))
    }

    @Test func readsDataAsJSONDecoderDoes() throws {
        var generator = SplitMix(seed: 0xDA7A)
        let blobs = (0..<100).map { _ in Data((0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        #expect(agree([Data].self, try JSONEncoder().encode(blobs)))
        for text in ["AAE", "AAE=", "A", "====", "AA=E", #"AA\u003d\u003d"#, "not base64!", "", #"AQID\nBA=="#] {
            agree(Data.self, "\"\(text)\"")
        }
        let deferred = JSONDecoder()
        deferred.dataDecodingStrategy = .deferredToData
        #expect(agree(Data.self, "[1,2,255]", decoder: deferred))
        #expect(!agree(Data.self, "[256]", decoder: deferred))
    }

    @Test func settingsTheTapeDoesNotFollowGoToJSONDecoder() {
        struct Snake: Decodable, Equatable { let itemCount: Int }
        let customKeys = JSONDecoder()
        customKeys.keyDecodingStrategy = .custom { path in path.last! }
        #expect(!agree(Snake.self, #"{"itemCount":3}"#, decoder: customKeys))
        let iso = JSONDecoder()
        iso.dateDecodingStrategy = .iso8601
        #expect(!agree([Date].self, #"["2026-11-23T10:00:00Z"]"#, decoder: iso))
        let custom = JSONDecoder()
        custom.dataDecodingStrategy = .custom { _ in Data([7]) }
        #expect(!agree(Data.self, "0", decoder: custom))
        final class Custom: JSONDecoder, @unchecked Sendable {}
        #expect(!agree([Int].self, "[1]", decoder: Custom()))
    }

    @Test func userInfoReachesTheType() {
        struct Scaled: Decodable, Equatable {
            let value: Int
            init(value: Int) { self.value = value }
            init(from decoder: any Decoder) throws {
                value = try decoder.singleValueContainer().decode(Int.self) * (decoder.userInfo[.scale] as? Int ?? 1)
            }
        }
        let decoder = JSONDecoder()
        decoder.userInfo[.scale] = 10
        #expect(agree([Scaled].self, "[1,2]", decoder: decoder))
        #expect(decoder.decodedByTape([Scaled].self, from: Data("[3]".utf8)) == [Scaled(value: 30)] as [Scaled]?)
    }

    /// Documents with random structure, spacing, escapes and numbers, each decoded by both.
    @Test func randomDocumentsDecodeAlike() {
        var generator = SplitMix(seed: 0x7E57)
        var decodedByTape = 0
        for _ in 0..<400 {
            let document = RandomNode.document(depth: 3, using: &generator)
            if agree(RandomNode.self, document) { decodedByTape += 1 }
        }
        #expect(decodedByTape > 100)
    }

    /// The same documents with a byte changed: wherever the tape still decodes one, it agrees.
    @Test func damagedDocumentsDecodeAlikeOrGoToJSONDecoder() {
        var generator = SplitMix(seed: 0xDA3A)
        for _ in 0..<1_500 {
            var bytes = Array(RandomNode.document(depth: 2, using: &generator).utf8)
            let position = Int(generator.next() % UInt64(bytes.count))
            let replacements: [UInt8] = [0x22, 0x5C, 0x2C, 0x7B, 0x7D, 0x5B, 0x5D, 0x3A, 0x30, 0x2D, 0x65, 0x2E, 0x20, 0x00, 0xC3, 0xFF, 0x75]
            bytes[position] = replacements[Int(generator.next() % UInt64(replacements.count))]
            agree(RandomNode.self, Data(bytes))
        }
    }
}

extension CodingUserInfoKey {
    fileprivate static let scale = CodingUserInfoKey(rawValue: "scale")!
}

/// A deterministic generator, so that a failure can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A tree whose documents are written by hand, in every spelling JSON allows.
struct RandomNode: Decodable, Equatable {
    let name: String
    let weight: Double
    let count: Int
    let flag: Bool?
    let labels: [String: String]
    let children: [RandomNode]

    static func document(depth: Int, using generator: inout SplitMix) -> String {
        var members = [
            "\"name\":\(string(using: &generator))",
            "\"weight\":\(number(integral: false, using: &generator))",
            "\"count\":\(number(integral: true, using: &generator))",
            "\"labels\":{\((0..<Int.random(in: 0...3, using: &generator)).map { _ in "\(string(using: &generator)):\(string(using: &generator))" }.joined(separator: ","))}",
            "\"children\":[\(depth == 0 ? "" : (0..<Int.random(in: 0...2, using: &generator)).map { _ in document(depth: depth - 1, using: &generator) }.joined(separator: " , "))]",
        ]
        switch Int.random(in: 0...2, using: &generator) {
        case 0: members.append("\"flag\":null")
        case 1: members.append("\"flag\":\(Bool.random(using: &generator))")
        default: break
        }
        members.shuffle(using: &generator)
        let space = [" ", "", "\n\t", "\r\n"].randomElement(using: &generator)!
        return "{\(space)" + members.joined(separator: ",\(space)") + "\(space)}"
    }

    private static func string(using generator: inout SplitMix) -> String {
        let pieces = ["a", "tern", "é", "\\u00e9", "\\\"", "\\\\", "\\/", "\\n", "\\ud83d\\ude00", "😀", "\\u0000", " ", "K", "\u{212A}", "汉"]
        return "\"" + (0..<Int.random(in: 0...4, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined() + "\""
    }

    private static func number(integral: Bool, using generator: inout SplitMix) -> String {
        let sign = Bool.random(using: &generator) ? "-" : ""
        let whole = Bool.random(using: &generator) ? "0" : String(UInt64.random(in: 1...UInt64.max >> UInt64.random(in: 1...63, using: &generator), using: &generator))
        guard !integral || Int.random(in: 0...9, using: &generator) == 0 else { return sign + whole }
        let fraction = Bool.random(using: &generator) ? "." + String(UInt32.random(in: 0...999_999, using: &generator)) : ""
        let exponent = Int.random(in: 0...3, using: &generator) == 0 ? ["e", "E"].randomElement(using: &generator)! + ["", "+", "-"].randomElement(using: &generator)! + String(Int.random(in: 0...330, using: &generator)) : ""
        return sign + whole + fraction + exponent
    }
}
