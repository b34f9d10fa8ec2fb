import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads) struct QueryEncodingTests {
    private func query(_ parameters: URLParameters) throws -> String {
        var draft = RequestDraft(method: .get, url: URL(string: "https://x.io/a")!)
        try parameters.encode(into: &draft)
        return URLComponents(url: draft.url, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? ""
    }

    @Test func escapesEverythingButUnreservedCharacters() throws {
        #expect(try query(URLParameters(["q": "a b&c=d+e/é"])) == "q=a%20b%26c%3Dd%2Be%2F%C3%A9")
        #expect(try query(URLParameters(["k y": "-._~"])) == "k%20y=-._~")
    }

    @Test func keysComeOutSortedAtEveryLevel() throws {
        let parameters = URLParameters(["b": 1, "a": ["z": 1, "y": 2], "c": "x"])
        #expect(try query(parameters) == "a%5By%5D=2&a%5Bz%5D=1&b=1&c=x")
    }

    @Test(arguments: [
        (QueryEncoding.ArrayEncoding.brackets, "tags%5B%5D=a&tags%5B%5D=b"),
        (.noBrackets, "tags=a&tags=b"),
        (.indexInBrackets, "tags%5B0%5D=a&tags%5B1%5D=b"),
    ])
    func arraysFollowTheChosenConvention(arrays: QueryEncoding.ArrayEncoding, expected: String) throws {
        #expect(try query(URLParameters(["tags": ["a", "b"]], encoding: QueryEncoding(arrays: arrays))) == expected)
    }

    @Test func boolsFollowTheChosenConvention() throws {
        #expect(try query(URLParameters(["on": true, "off": false])) == "off=0&on=1")
        #expect(try query(URLParameters(["on": true, "off": false], encoding: QueryEncoding(bools: .literal))) == "off=false&on=true")
    }

    @Test func mixedValuesNestingAndNil() throws {
        let missing: Int? = nil
        let present: Int? = 4
        let parameters = URLParameters([
            "page": 2, "ratio": 0.5, "id": UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
            "missing": missing, "present": present, "deep": ["list": [["k": 1]]],
        ])
        #expect(try query(parameters) == "deep%5Blist%5D%5B%5D%5Bk%5D=1&id=00000000-0000-0000-0000-000000000001&page=2&present=4&ratio=0.5")
    }

    @Test func mergesWithAQueryAlreadyInTheURL() throws {
        var draft = RequestDraft(method: .get, url: URL(string: "https://x.io/a?existing=1#frag")!)
        try URLParameters(["page": 2]).encode(into: &draft)
        #expect(draft.url.absoluteString == "https://x.io/a?existing=1&page=2#frag")
    }

    @Test func encodableValuesUseTheirCodingKeysAndStrategies() throws {
        struct Search: Encodable, Sendable {
            let searchTerm: String
            let limit: Int
            let exact: Bool
            let tags: [String]
        }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let parameters = URLParameters(Search(searchTerm: "tern", limit: 10, exact: true, tags: ["x"]), encoder: encoder)
        #expect(try query(parameters) == "exact=1&limit=10&search_term=tern&tags%5B%5D=x")
    }

    @Test func anUnsupportedValueFailsNamingTheParameter() throws {
        struct Opaque: Sendable {}
        let error = #expect(throws: APIError.self) { try query(URLParameters(["filter": ["inner": [Opaque()]]])) }
        guard case .encodingFailed(let failure)? = error else {
            Issue.record("wrong error: \(String(describing: error))")
            return
        }
        #expect(failure.parameter == "filter[inner][0]")
        #expect("\(failure)".contains("Opaque cannot be written as a query value"))
    }

    @Test func aNonKeyedEncodableIsRefused() {
        #expect(throws: APIError.self) { try query(URLParameters([1, 2, 3])) }
    }

    /// `n=nan` used to be sent, though JSON refuses NaN; both refuse it now, naming the key.
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func aNumberThatIsNotFiniteIsRefused(number: Double) throws {
        let values: [[String: any Sendable]] = [
            ["n": number], ["n": Float(number)], ["outer": ["inner": [1.0, number]]], ["n": Decimal.nan],
        ]
        for value in values {
            let error = #expect(throws: APIError.self) { try query(URLParameters(value)) }
            guard case .encodingFailed(let failure)? = error else { continue }
            #expect(failure.parameter == "n" || failure.parameter == "outer[inner][1]")
            #expect(failure.description.contains("not a finite number"))
            var draft = RequestDraft(method: .post, url: URL(string: "https://x.io/a")!)
            #expect(throws: APIError.self) { try FormParameters(value).encode(into: &draft) }
        }
    }
}
