import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// `Link` headers as servers really send them (RFC 8288).
@Suite(.onTestThreads) struct WebLinkTests {
    let base = URL(string: "https://api.example.com/v1/repos?page=1")!

    func links(_ header: String) -> [WebLink] {
        WebLink.links(in: header, relativeTo: base)
    }

    @Test func githubsHeader() {
        // As GitHub sends it for page 1 of 26.
        let header = #"<https://api.github.com/user/repos?page=2&per_page=30>; rel="next", "#
            + #"<https://api.github.com/user/repos?page=26&per_page=30>; rel="last""#
        let found = links(header)
        #expect(found.map(\.url.absoluteString) == ["https://api.github.com/user/repos?page=2&per_page=30",
                                                    "https://api.github.com/user/repos?page=26&per_page=30"])
        #expect(found.map(\.relations) == [["next"], ["last"]])
    }

    @Test func severalRelationsInOneRelAndAnyCase() {
        let found = links(#"<https://a.example/2>; REL="Next Last""#)
        #expect(found.first?.relations == ["next", "last"])
    }

    @Test func commasInsideTargetsAndQuotedValues() {
        let header = #"<https://a.example/x?ids=1,2,3>; rel=next; title="one, two; three", <https://a.example/y>; rel=prev"#
        let found = links(header)
        #expect(found.map(\.url.absoluteString) == ["https://a.example/x?ids=1,2,3", "https://a.example/y"])
        #expect(found.first?.parameters["title"] == "one, two; three")
        #expect(found.last?.relations == ["prev"])
    }

    @Test func escapesParametersWithoutValuesAndTheFirstRelWins() {
        let found = links(#"<https://a.example/>; rel="next"; rel="last"; crossorigin; title="say \"hi\"""#)
        #expect(found.first?.relations == ["next"])
        #expect(found.first?.parameters["crossorigin"] == "")
        #expect(found.first?.parameters["title"] == #"say "hi""#)
    }

    @Test func relativeTargetsResolveAgainstTheResponsesURL() {
        #expect(links(#"<?page=2>; rel=next"#).first?.url.absoluteString == "https://api.example.com/v1/repos?page=2")
        #expect(links(#"</v2/repos>; rel=next"#).first?.url.absoluteString == "https://api.example.com/v2/repos")
        #expect(links(#"<items>; rel=next"#).first?.url.absoluteString == "https://api.example.com/v1/items")
    }

    @Test(arguments: ["", "   ", "garbage", "<unterminated; rel=next", #"rel="next""#, ";;;", ",,,"])
    func malformedHeadersGiveNoLinks(header: String) {
        #expect(links(header).isEmpty)
    }

    @Test func aMalformedLinkIsSkippedAndTheRestRead() {
        let found = links(#"<https://a.example/1>; rel=next junk, <https://a.example/2>; rel=last"#)
        #expect(found.map(\.url.absoluteString) == ["https://a.example/2"])
    }

    @Test func theResponseReadsEveryLinkFieldAgainstItsURLAfterARedirect() async throws {
        let api = try TestAPI()
        let response: Response = try await api.request(route: api.get(endpoint: "/redirect/302?to=/linked/page")).value
        #expect(response.url?.path == "/linked/page")
        #expect(response.link(rel: "NEXT")?.absoluteString == (try TestServer.baseURL) + "/linked/items?page=2")
        #expect(response.link(rel: "last")?.absoluteString == (try TestServer.baseURL) + "/items?page=9")
        #expect(response.link(rel: "prev") == nil)
    }
}
