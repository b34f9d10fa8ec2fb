import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern

/// A value of another kind than the one asked: the tape throws `JSONDecoder`'s own error, word for
/// word, and goes on with the document, so a type that tries one kind after another is decoded
/// once, not twice.
@Suite(.onTestThreads) struct TapeMismatchTests {
    /// `TapeDecodingTests`' check: the tape's value, or its leaving the document to `JSONDecoder`,
    /// agrees with `JSONDecoder`; whether the tape kept the document.
    @discardableResult
    private func agree<T: Decodable & Equatable>(_ type: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        TapeDecodingTests().agree(type, json, sourceLocation: sourceLocation)
    }

    /// Any JSON value, each kind tried in turn with `try?`, as apps write it (and as `JSONAB`'s
    /// payload of the same name).
    indirect enum AnyJSON: Decodable, Equatable {
        case null, bool(Bool), number(Double), string(String), array([AnyJSON]), object([String: AnyJSON])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([AnyJSON].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: AnyJSON].self))
            }
        }
    }

    @Test func aValueTriedKindByKindDecodesOnTheTapeAtEveryDepth() throws {
        let document = #"[null,true,false,0,-1.5,1e3,"s","\u00e9\/",[],{},[1,[true,{"a":[null,"x"]}]],{"k":{"n":{"m":[1,2,{"z":false}]}},"e":""}]"#
        #expect(agree([AnyJSON].self, document), "the tape kept the document")
        let decoded = try #require(JSONDecoder().decodedByTape([AnyJSON].self, from: Data(document.utf8)))
        let expected: [AnyJSON] = [
            .null, .bool(true), .bool(false), .number(0), .number(-1.5), .number(1000), .string("s"), .string("é/"), .array([]), .object([:]),
            .array([.number(1), .array([.bool(true), .object(["a": .array([.null, .string("x")])])])]),
            .object(["k": .object(["n": .object(["m": .array([.number(1), .number(2), .object(["z": .bool(false)])])])]), "e": .string("")]),
        ]
        #expect(decoded == expected)
    }

    /// String-keyed dictionaries are read member by member: the first of a name wins, names that
    /// spell one number stay apart, escaped names are unescaped, as in `JSONDecoder`.
    @Test func dictionariesKeepJSONDecodersKeys() {
        #expect(agree([String: Int].self, #"{"1":1,"01":2,"b":3,"\u0062":4,"":5}"#))
        #expect(agree([String: [String: Int?]].self, #"{"a":{"x":null,"y":1},"b":{}}"#))
        #expect(agree([String: Int].self, #"{"a":1,"a":2}"#))
        #expect(!agree([String: Int].self, #"{"a":1,"b":"2"}"#))
        #expect(!agree([String: Int].self, "[1]"))
    }

    @Test func randomDocumentsDecodeAlikeKindByKind() {
        var generator = SplitMix(seed: 0xA11)
        var decodedByTape = 0
        for _ in 0..<200 where agree(AnyJSON.self, RandomNode.document(depth: 3, using: &generator)) { decodedByTape += 1 }
        #expect(decodedByTape > 100)
    }

    /// Tries every kind on one value and records what each attempt threw, path included, then
    /// reads the value as what it is: every error and the value must be `JSONDecoder`'s.
    struct Attempts: Decodable, Equatable {
        var log: [String] = []

        init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            let attempts: [() throws -> String] = [
                { "\(try single.decode(Bool.self))" }, { "\(try single.decode(Int.self))" }, { "\(try single.decode(UInt8.self))" },
                { "\(try single.decode(Double.self))" }, { "\(try single.decode(Float.self))" }, { try single.decode(String.self) },
                { "\(try single.decode(Bool?.self) as Any)" }, { "\(try single.decode([Int].self))" }, { "\(try single.decode([String: Int].self))" },
                { "\(try decoder.container(keyedBy: TapeDecodingTests.AnyKey.self).allKeys.count)" }, { "\(try decoder.unkeyedContainer().count ?? -1)" },
            ]
            for attempt in attempts { log.append(Self.outcome(of: attempt)) }
            // After every miss, the container still reads the value as what it is.
            log.append(single.decodeNil() ? "null" : Self.outcome { try single.decode(String.self) })
        }

        /// What an attempt gave, or its error with the path printed key by key.
        static func outcome(of attempt: () throws -> String) -> String {
            do { return try attempt() } catch let error as DecodingError {
                return "\(error) at \(Self.context(of: error)?.codingPath.map { "\($0)" } ?? [])"
            } catch { return "\(error)" }
        }

        static func context(of error: DecodingError) -> DecodingError.Context? {
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context): context
            @unknown default: nil
            }
        }
    }

    @Test func aFailedAttemptLeavesTheSingleValueContainerUsable() throws {
        let document = #"{"k":[1,"s",true,null,{"a":1},[1],7],"2":[[null]]}"#
        #expect(agree([String: [Attempts]].self, document), "every miss was JSONDecoder's own, and the tape kept the document")
        let decoded = try #require(JSONDecoder().decodedByTape([String: [Attempts]].self, from: Data(document.utf8)))
        #expect(decoded["k"]?[1].log.last == "s")
        // A fraction read as an integer, or a negative number as an unsigned one, is JSONDecoder's
        // to refuse, in words of its own: the document goes to it, and decodes alike.
        #expect(!agree([Attempts].self, "[2.5]"))
        #expect(!agree([Attempts].self, "[-7]"))
        #expect(decoded["k"]?[1].log.first?.contains("Expected to decode Bool but found a string instead.") == true)
        #expect(decoded["k"]?[1].log.first?.hasSuffix(#"at ["_DictionaryCodingKey(stringValue: \"k\", intValue: nil)", "_CodingKey(stringValue: \"Index 1\", intValue: 1)"]"#) == true)
    }

    /// Reads each element of an array after a miss on it, and each member of an object the same way.
    struct Retries: Decodable, Equatable {
        var log: [String] = []
        enum CodingKeys: String, CodingKey { case list, text, number, flag, nothing }

        init(from decoder: any Decoder) throws {
            let keyed = try decoder.container(keyedBy: CodingKeys.self)
            var list = try keyed.nestedUnkeyedContainer(forKey: .list)
            while !list.isAtEnd {
                let position = list.currentIndex
                log.append(Attempts.outcome { "\(try list.decode(Bool.self))" })
                log.append(Attempts.outcome { "\(try list.nestedContainer(keyedBy: CodingKeys.self).allKeys.count)" })
                log.append(Attempts.outcome { "\(try list.nestedUnkeyedContainer().count ?? -1)" })
                log.append(Attempts.outcome { "\(try list.decode(Int.self))" })
                #expect(list.currentIndex == position, "a miss does not move on")
                log.append(Attempts.outcome { try list.decodeNil() ? "null" : try list.decode(String.self) })
            }
            for key in [CodingKeys.text, .number, .flag, .nothing] {
                log.append(Attempts.outcome { "\(try keyed.decode(Int.self, forKey: key))" })
                log.append(Attempts.outcome { "\(try keyed.decodeIfPresent(Bool.self, forKey: key) as Any)" })
                log.append(Attempts.outcome { "\(try keyed.decode([String].self, forKey: key))" })
                log.append(Attempts.outcome { "\(try keyed.nestedContainer(keyedBy: CodingKeys.self, forKey: key).allKeys.count)" })
                log.append(Attempts.outcome { "\(try keyed.decodeNil(forKey: key) ? "null" : "\(try keyed.decode(String.self, forKey: key))")" })
            }
        }
    }

    @Test func aFailedAttemptLeavesUnkeyedAndKeyedContainersUsable() throws {
        let document = #"[{"list":["a",null,"b"],"text":"t","number":"7","flag":"yes","nothing":null}]"#
        #expect(agree([Retries].self, document), "every miss was JSONDecoder's own, and the tape kept the document")
        let decoded = try #require(JSONDecoder().decodedByTape([Retries].self, from: Data(document.utf8)))
        // Each element's and each member's last read, after its misses, gets its value.
        let log = try #require(decoded.first?.log)
        #expect(log.count == 35)
        #expect(stride(from: 4, to: log.count, by: 5).map { log[$0] } == ["a", "null", "b", "t", "7", "yes", "null"])
    }

    /// A type that tries a `Bool` before an integer, and fails when neither is there.
    struct Strict: Decodable, Equatable {
        let value: Int
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            value = try (try? container.decode(Bool.self)).map { $0 ? 1 : 0 } ?? container.decode(Int.self)
        }
    }

    /// A document whose decoding fails after misses the type caught: the error is JSONDecoder's, at
    /// the failing value's coding path, through `decodeFaster` and `JSONParser` alike.
    @Test func errorsKeepTheirCodingPathWhenTheWholeDecodeFails() throws {
        struct Box: Decodable { let items: [AnyJSON]; let counts: [String: [Strict]] }
        let document = Data(#"{"items":[1,"x",{"y":[true]}],"counts":{"a":[1,2],"b":[3,"four"]}}"#.utf8)
        #expect(JSONDecoder().decodedByTape(Box.self, from: document) == nil)
        let expected = try #require(Result { try JSONDecoder().decode(Box.self, from: document) }.failure as? DecodingError)
        let faster = try #require(Result { try JSONDecoder().decodeFaster(Box.self, from: document) }.failure as? DecodingError)
        #expect(String(describing: faster) == String(describing: expected))
        let path = Attempts.context(of: faster)?.codingPath.map(\.stringValue)
        #expect(path == ["counts", "b", "Index 1"])
        guard case .typeMismatch(let type, _) = faster else { Issue.record("expected a type mismatch, got \(faster)"); return }
        #expect(type is Int.Type)

        let url = URL(string: "https://api.example.com/box")!
        let response = Response(request: URLRequest(url: url), httpResponse: HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: nil)!,
                                body: document)
        let parsed = try #require(Result { try JSONParser().parse(Box.self, from: response) }.failure as? DecodingError)
        #expect(Attempts.context(of: parsed)?.codingPath.map(\.stringValue) == ["counts", "b", "Index 1"])
    }
}

extension Result {
    /// The error, when there is one.
    fileprivate var failure: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
