import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern
import TernTesting

/// A request whose options change no setting shares its API's settings and header fields,
/// made once with the API (`RequestContext`); any other resolves its own. Attacked from the
/// outside: one request's setting applies to it alone, the default requests around it (before,
/// after, hundreds at once) behave as the configuration says, and nothing a request's
/// `URLRequest` gets (options, delegate, adapter, redirect, cookies) reaches the next.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct SharedSettingsAttackTests {
    struct Reply: Codable, Sendable, Equatable {
        let target: String
    }

    /// A parser that tells it was used: whatever came, it answers `parsed-by-<tag>`.
    struct TaggedParser: ResponseParser {
        let tag: String
        let accept: String?
        var acceptHeader: String? { accept }
        func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            try JSONDecoder().decode(type, from: Data(#"{"target": "parsed-by-\#(tag)"}"#.utf8))
        }
    }

    /// Signs every request: `X-Signed` with its target, and for `?sign-accept` its `Accept` too.
    final class Signer: APIDelegate {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            let target = request.url.map { $0.path + ($0.query.map { "?" + $0 } ?? "") } ?? ""
            request.setValue("signed " + target, forHTTPHeaderField: "X-Signed")
            request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
            if target.contains("sign-accept") { request.setValue("signed/accept", forHTTPHeaderField: "Accept") }
        }
    }

    /// Adds `X-Adapted` with the request's target.
    struct Adapter: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws {
            let target = request.url.map { $0.path + ($0.query.map { "?" + $0 } ?? "") } ?? ""
            request.setValue("adapted " + target, forHTTPHeaderField: "X-Adapted")
        }
    }

    /// Records the URL of every `willSend` it sees.
    final class EventPlugin: Plugin {
        let sent = Recorder<String>()
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .willSend(let request) = event { sent.append(request.url?.absoluteString ?? "") }
        }
    }

    static let common: HTTPHeaders = ["X-Common": "common"]

    func api(_ configuration: APIConfiguration = APIConfiguration(commonHeaders: common, retryPolicy: .never),
             parser: any ResponseParser = JSONParser(), transport: (any Transport)? = nil) -> AbstractAPI {
        AbstractAPI(responseParser: parser, configuration: configuration, transport: transport ?? TestTransport.make(), responseQueue: .global())
    }

    func send(_ api: AbstractAPI, _ route: Route, _ options: RequestOptions = RequestOptions()) async -> Result<Reply, any Error> {
        await (api.request(route: route, options: options) as Promise<Reply>).result
    }

    /// A default request's head: the API's `Accept` and common field, none of another's.
    func expectDefault(_ head: String, accept: String = "application/json", sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(HeadRecordingServer.fields("Accept", in: head) == [accept], "\(head)", sourceLocation: sourceLocation)
        #expect(HeadRecordingServer.fields("X-Common", in: head) == ["common"], "\(head)", sourceLocation: sourceLocation)
        for name in ["X-Own", "Cache-Control", "Authorization", "X-Signed", "X-Adapted", "Cookie"] {
            #expect(HeadRecordingServer.fields(name, in: head).isEmpty, "\(name) in \(head)", sourceLocation: sourceLocation)
        }
    }

    enum Setting: String, CaseIterable, Sendable {
        case headers, timeout, cachePolicy, maximumResponseSize, validation, parser, retryPolicy, redirectPolicy,
             authenticates, plugins, sampleData, cacheDirectives, streamSettings
    }

    /// One request with one setting between default requests: its outcome is the setting's;
    /// those before and after it are the configuration's, exactly.
    @Test(arguments: Setting.allCases) func oneRequestsSettingIsItsAlone(_ setting: Setting) async throws {
        let server = try HeadRecordingServer()
        let plugin = EventPlugin()
        let api = api()
        let url = server.url
        let tag = setting.rawValue
        // The route each default request around it takes: the one the setting changes the outcome of.
        let path = switch setting {
        case .timeout: "/slow"
        case .maximumResponseSize: "/big"
        case .validation: "/s/404"
        case .retryPolicy: "/s/503"
        case .redirectPolicy: "/hop"
        default: "/plain"
        }
        func expectDefaultOutcome(_ result: Result<Reply, any Error>, _ target: String, sourceLocation: SourceLocation = #_sourceLocation) {
            switch setting {
            case .validation, .retryPolicy:
                guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
                    Issue.record("\(target): \(result)", sourceLocation: sourceLocation)
                    return
                }
                #expect(failure.statusCode == (setting == .validation ? 404 : 503), sourceLocation: sourceLocation)
            case .redirectPolicy:
                #expect((try? result.get()) == Reply(target: "/landed"), "\(result)", sourceLocation: sourceLocation)
            case .maximumResponseSize:
                #expect((try? result.get()) == Reply(target: String(repeating: "x", count: 300)), "\(result)", sourceLocation: sourceLocation)
            default:
                #expect((try? result.get()) == Reply(target: target), "\(result)", sourceLocation: sourceLocation)
            }
        }
        let before = await send(api, .get(url + path + "?before"))
        expectDefaultOutcome(before, path + "?before")
        let target = path + "?own-" + tag
        switch setting {
        case .headers:
            let result = await send(api, .get(url + target), RequestOptions(headers: ["X-Own": "own", "accept": "text/own", "X-Common": "mine"]))
            #expect(try result.get() == Reply(target: target))
            let head = server.head(target)
            #expect(HeadRecordingServer.fields("Accept", in: head) == ["text/own"])
            #expect(HeadRecordingServer.fields("X-Own", in: head) == ["own"])
            #expect(HeadRecordingServer.fields("X-Common", in: head) == ["mine"])
        case .timeout:
            let result = await send(api, .get(url + target), RequestOptions(timeout: 0.3))
            guard case .failure(APIError.timeout(let timeout)) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(timeout.interval == 0.3)
        case .cachePolicy:
            let result = await send(api, .get(url + target), RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData))
            #expect(try result.get() == Reply(target: target))
        case .maximumResponseSize:
            let result = await send(api, .get(url + target), RequestOptions(maximumResponseSize: 100))
            guard case .failure(APIError.responseTooLarge(let failure)) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(failure.limit == 100)
        case .validation:
            let result = await (api.request(route: .get(url + target), options: RequestOptions(validation: .statusCodes(200..<500))) as Promise<Data>).result
            #expect(try String(decoding: result.get(), as: UTF8.self) == #"{"target": "\#(target)"}"#)
        case .parser:
            let result = await send(api, .get(url + target), RequestOptions(parser: TaggedParser(tag: "own", accept: "text/tagged")))
            #expect(try result.get() == Reply(target: "parsed-by-own"))
            #expect(HeadRecordingServer.fields("Accept", in: server.head(target)) == ["text/tagged"])
        case .retryPolicy:
            let retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false)
            let result = await send(api, .get(url + target), RequestOptions(retryPolicy: retry))
            guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(failure.statusCode == 503)
            #expect(server.heads(for: target).count == 3, "the first attempt and two retries")
        case .redirectPolicy:
            let result = await send(api, .get(url + target), RequestOptions(redirectPolicy: .never))
            guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(failure.statusCode == 302)
        case .authenticates:
            let signer = Signer()
            api.delegate = signer
            let result = await send(api, .get(url + target), RequestOptions(authenticates: false))
            api.delegate = nil
            #expect(try result.get() == Reply(target: target))
            #expect(HeadRecordingServer.fields("Authorization", in: server.head(target)).isEmpty)
            #expect(HeadRecordingServer.fields("X-Signed", in: server.head(target)).isEmpty)
        case .plugins:
            let result = await send(api, .get(url + target), RequestOptions(plugins: [plugin]))
            #expect(try result.get() == Reply(target: target))
        case .sampleData:
            // Ignored by an API that does not answer with sample data.
            let result = await send(api, .get(url + target), RequestOptions(sampleData: .json(#"{"target": "sample"}"#)))
            #expect(try result.get() == Reply(target: target))
        case .cacheDirectives:
            let result = await send(api, .get(url + target), RequestOptions(cacheDirectives: CacheDirectives(noCache: true, maxAge: 5)))
            #expect(try result.get() == Reply(target: target))
            #expect(HeadRecordingServer.fields("Cache-Control", in: server.head(target)) == ["no-cache, max-age=5"])
        case .streamSettings:
            let options = RequestOptions(streamBufferSize: 4096, streamIdleTimeout: 30, streamMaximumDuration: 60)
            var body = Data()
            for try await chunk in api.stream(route: .get(url + target), options: options) { body.append(chunk) }
            #expect(try JSONDecoder().decode(Reply.self, from: body) == Reply(target: target))
            #expect(HeadRecordingServer.fields("Accept", in: server.head(target)) == ["*/*"])
            #expect(HeadRecordingServer.fields("X-Common", in: server.head(target)) == ["common"])
        }
        let after = await send(api, .get(url + path + "?after"))
        expectDefaultOutcome(after, path + "?after")
        for name in ["before", "after"] {
            let heads = server.heads(for: path + "?" + name)
            #expect(heads.count == 1, "\(name): \(heads.count) heads (retried?)")
            expectDefault(heads.first ?? "")
        }
        if setting == .redirectPolicy {
            #expect(server.heads(for: "/landed").count == 2, "both default requests followed the redirect")
        }
        #expect(plugin.sent.items == (setting == .plugins ? [url + target] : []), "the request's plugin saw it alone")
    }

    /// Hundreds in flight at once, every third with headers of its own, every third with a
    /// parser of its own, some re-signing `Accept`, over an API with a signing delegate and an
    /// adapter: each head carries exactly its own request's fields.
    @Test func hundredsAtOnceEachSendsItsOwnFields() async throws {
        let server = try HeadRecordingServer()
        let api = api(APIConfiguration(commonHeaders: Self.common, retryPolicy: .never, adapters: [Adapter()]))
        api.delegate = Signer()
        let url = server.url
        let count = 300
        let results = await withTaskGroup(of: (Int, Result<Reply, any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    let target = "/c?i=\(index)" + (index % 5 == 0 ? "&sign-accept" : "")
                    let options = switch index % 3 {
                    case 1: RequestOptions(headers: ["X-Own": "own \(index)", "Accept": "text/own-\(index)"])
                    case 2: RequestOptions(parser: TaggedParser(tag: "\(index)", accept: "text/tagged-\(index)"))
                    default: RequestOptions()
                    }
                    return (index, await send(api, .get(url + target), options))
                }
            }
            var results: [Int: Result<Reply, any Error>] = [:]
            for await (index, result) in group { results[index] = result }
            return results
        }
        #expect(server.heads.items.count == count)
        for index in 0..<count {
            let target = "/c?i=\(index)" + (index % 5 == 0 ? "&sign-accept" : "")
            let head = server.head(target)
            let expected = index % 3 == 2 ? "parsed-by-\(index)" : target
            #expect(try results[index]?.get() == Reply(target: expected), "\(index)")
            let accept = index % 5 == 0 ? "signed/accept" : index % 3 == 1 ? "text/own-\(index)" : index % 3 == 2 ? "text/tagged-\(index)" : "application/json"
            #expect(HeadRecordingServer.fields("Accept", in: head) == [accept], "\(index): \(head)")
            #expect(HeadRecordingServer.fields("X-Own", in: head) == (index % 3 == 1 ? ["own \(index)"] : []), "\(index): \(head)")
            #expect(HeadRecordingServer.fields("X-Common", in: head) == ["common"], "\(index): \(head)")
            #expect(HeadRecordingServer.fields("X-Signed", in: head) == ["signed " + target], "\(index): \(head)")
            #expect(HeadRecordingServer.fields("X-Adapted", in: head) == ["adapted " + target], "\(index): \(head)")
            #expect(HeadRecordingServer.fields("Authorization", in: head) == ["Bearer secret"], "\(index): \(head)")
        }
        // And after them all, with the delegate gone, a default request is the API's alone.
        api.delegate = nil
        let last = await send(api, .get(url + "/last"))
        #expect(try last.get() == Reply(target: "/last"))
        let head = server.head("/last")
        #expect(HeadRecordingServer.fields("X-Adapted", in: head) == ["adapted /last"])
        #expect(HeadRecordingServer.fields("X-Signed", in: head).isEmpty)
        #expect(HeadRecordingServer.fields("Accept", in: head) == ["application/json"])
    }

    enum Shape: String, CaseIterable, Sendable {
        case json, noAccept, customAccept, commonAccept, commonAcceptLowercased
    }

    func api(_ shape: Shape) -> AbstractAPI {
        var common = Self.common
        switch shape {
        case .commonAccept: common["Accept"] = "text/common"
        case .commonAcceptLowercased: common["accept"] = "text/common"
        default: break
        }
        let parser: any ResponseParser = switch shape {
        case .noAccept: TaggedParser(tag: "none", accept: nil)
        case .customAccept: TaggedParser(tag: "custom", accept: "text/custom")
        default: JSONParser()
        }
        return api(APIConfiguration(commonHeaders: common, timeout: 30, retryPolicy: .never), parser: parser)
    }

    /// For each kind of API, a default request (the API's shared fields) and one whose options
    /// restate the configuration (resolved on its own, through the merge) send the same fields,
    /// a stream too; and the exact `Accept` each kind asks.
    @Test(arguments: Shape.allCases) func sharedFieldsAreTheFieldsAResolvedRequestSends(_ shape: Shape) async throws {
        let server = try HeadRecordingServer()
        let api = api(shape)
        let url = server.url
        let restated = RequestOptions(timeout: 30)
        for (target, options) in [("/shared", RequestOptions()), ("/resolved", restated)] {
            _ = try await send(api, .get(url + target), options).get()
            var body = Data()
            for try await chunk in api.stream(route: .get(url + target + "?stream"), options: options) { body.append(chunk) }
            #expect(try JSONDecoder().decode(Reply.self, from: body) == Reply(target: target + "?stream"))
        }
        #expect(HeadRecordingServer.fieldLines(of: server.head("/shared")) == HeadRecordingServer.fieldLines(of: server.head("/resolved")))
        #expect(HeadRecordingServer.fieldLines(of: server.head("/shared?stream")) == HeadRecordingServer.fieldLines(of: server.head("/resolved?stream")))
        let accept: [String]? = switch shape {
        case .json: ["application/json"]
        case .customAccept: ["text/custom"]
        case .commonAccept, .commonAcceptLowercased: ["text/common"]
        case .noAccept: nil   // whatever the transport sends of its own: compared above
        }
        if let accept {
            #expect(HeadRecordingServer.fields("Accept", in: server.head("/shared")) == accept)
        }
        let streamAccept = shape == .commonAccept || shape == .commonAcceptLowercased ? ["text/common"] : ["*/*"]
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/shared?stream")) == streamAccept)
        #expect(HeadRecordingServer.fields("X-Common", in: server.head("/shared")) == ["common"])
    }

    static let refused: [(name: String, value: String)] = [
        ("X-Bad", "a\r\nX-Injected: 1"),
        ("X-Bad", "a\nb"),
        ("Content-Length", "0"),
        ("transfer-encoding", "chunked"),
    ]

    enum Kind: String, CaseIterable, Sendable {
        case plain, parameters, options, stream, concurrent
    }

    /// Common headers that would be refused refuse every request, with or without parameters,
    /// options or a stream, with the same typed error, and nothing is sent.
    @Test(arguments: refused.indices, Kind.allCases) func invalidCommonHeadersRefuseEveryRequest(_ index: Int, _ kind: Kind) async throws {
        let (name, value) = Self.refused[index]
        let server = try HeadRecordingServer()
        let api = api(APIConfiguration(commonHeaders: [name: value], retryPolicy: .never))
        let url = server.url
        let expected: APIError.InvalidRequest.Reason = index < 2 ? .invalidHeader(name: name) : .framingHeader(name: name)
        func check(_ error: (any Error)?, sourceLocation: SourceLocation = #_sourceLocation) {
            guard case APIError.invalidRequest(let failure)? = error else {
                Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
                return
            }
            #expect(failure.reason == expected, sourceLocation: sourceLocation)
            #expect(failure.method == "GET", sourceLocation: sourceLocation)
        }
        switch kind {
        case .plain:
            for _ in 0..<3 { check(await send(api, .get(url + "/x")).failure) }
        case .parameters:
            check(await (api.request(route: .get(url + "/x"), parameters: URLParameters(["a": 1])) as Promise<Reply>).result.failure)
            check(await send(api, .get(url + "/x")).failure)
        case .options:
            check(await send(api, .get(url + "/x"), RequestOptions(headers: ["X-Own": "1"])).failure)
            check(await send(api, .get(url + "/x")).failure)
        case .stream:
            do {
                for try await _ in api.stream(route: .get(url + "/x")) {}
                Issue.record("the stream ran")
            } catch {
                check(error)
            }
        case .concurrent:
            let errors = await withTaskGroup(of: (any Error)?.self) { group in
                for _ in 0..<50 { group.addTask { await send(api, .get(url + "/x")).failure } }
                var errors: [(any Error)?] = []
                for await error in group { errors.append(error) }
                return errors
            }
            #expect(errors.count == 50)
            for error in errors { check(error) }
        }
        #expect(server.raw.connections == 0, "nothing is sent")
    }

    /// A redirect to another origin drops the credentials the delegate signed and the jar's
    /// cookies; the next default request to the origin gets both afresh, and one straight to the
    /// other origin neither: nothing of one request's URLRequest stays with the API.
    @Test func aRedirectsDroppedCredentialsAndTheJarsCookiesStayWithTheirRequest() async throws {
        let server = try HeadRecordingServer()
        let api = api()
        let url = server.url
        api.delegate = Signer()
        _ = try await send(api, .get(url + "/login")).get()
        #expect(api.cookieJar?.all.map(\.name) == ["jar"])
        #expect(try await send(api, .get(url + "/hop")).get() == Reply(target: "/landed"))
        let landed = server.head("/landed")
        #expect(HeadRecordingServer.fields("Cookie", in: landed).isEmpty, "\(landed)")
        #expect(HeadRecordingServer.fields("X-Signed", in: landed).isEmpty, "\(landed)")
        #expect(HeadRecordingServer.fields("Authorization", in: landed).isEmpty, "\(landed)")
        #expect(HeadRecordingServer.fields("X-Common", in: landed) == ["common"])
        _ = try await send(api, .get(url + "/next")).get()
        let next = server.head("/next")
        #expect(HeadRecordingServer.fields("Cookie", in: next) == ["jar=fromjar"])
        #expect(HeadRecordingServer.fields("X-Signed", in: next) == ["signed /next"])
        api.delegate = nil
        let other = "http://localhost:\(server.raw.port)/other"
        _ = try await send(api, .get(other)).get()
        expectDefault(server.head("/other"))
        _ = try await send(api, .get(url + "/unsigned")).get()
        let unsigned = server.head("/unsigned")
        #expect(HeadRecordingServer.fields("Cookie", in: unsigned) == ["jar=fromjar"])
        #expect(HeadRecordingServer.fields("X-Signed", in: unsigned).isEmpty)
        #expect(HeadRecordingServer.fields("Authorization", in: unsigned).isEmpty)
    }

    /// An API that answers with sample data: a request's own sample is its alone, a default
    /// request (the shared settings) has none and fails typed, at once or interleaved; nothing
    /// reaches the server.
    @Test func sampleDataIsPerRequest() async throws {
        let server = try HeadRecordingServer()
        let api = api(APIConfiguration(commonHeaders: Self.common, retryPolicy: .never, usesSampleData: true))
        let url = server.url
        let results = await withTaskGroup(of: (Int, Result<Reply, any Error>).self) { group in
            for index in 0..<100 {
                group.addTask {
                    let options = index.isMultiple(of: 2) ? RequestOptions(sampleData: .json(#"{"target": "sample \#(index)"}"#)) : RequestOptions()
                    return (index, await send(api, .get(url + "/x?\(index)"), options))
                }
            }
            var results: [Int: Result<Reply, any Error>] = [:]
            for await (index, result) in group { results[index] = result }
            return results
        }
        for index in 0..<100 {
            if index.isMultiple(of: 2) {
                #expect(try results[index]?.get() == Reply(target: "sample \(index)"))
            } else {
                guard case .failure(APIError.transportFailed(let failure))? = results[index] else {
                    Issue.record("\(index): \(String(describing: results[index]))")
                    continue
                }
                #expect(failure.underlying is MissingSampleData, "\(index): \(failure)")
            }
        }
        #expect(server.raw.connections == 0)
    }

    /// Several APIs (`BaseAPI` subclasses among them) on one transport, each with its own
    /// parser and common headers, requests interleaved: each head is its own API's.
    @Test func apisSharingATransportEachSendTheirOwn() async throws {
        let server = try HeadRecordingServer()
        let transport = TestTransport.make()
        let apis: [AbstractAPI] = try [
            TestAPI(baseURL: server.url, parser: JSONParser(), configuration: APIConfiguration(commonHeaders: ["X-Common": "api0"], retryPolicy: .never), transport: transport),
            TestAPI(baseURL: server.url, parser: TaggedParser(tag: "api1", accept: "text/api1"),
                    configuration: APIConfiguration(commonHeaders: ["X-Common": "api1"], retryPolicy: .never), transport: transport),
            api(APIConfiguration(commonHeaders: ["X-Common": "api2", "Accept": "text/api2"], retryPolicy: .never), transport: transport),
        ]
        let url = server.url
        let results = await withTaskGroup(of: (Int, Result<Reply, any Error>).self) { group in
            for index in 0..<150 {
                group.addTask { (index, await send(apis[index % 3], .get(url + "/m?\(index)"))) }
            }
            var results: [Int: Result<Reply, any Error>] = [:]
            for await (index, result) in group { results[index] = result }
            return results
        }
        for index in 0..<150 {
            let which = index % 3
            #expect(try results[index]?.get() == Reply(target: which == 1 ? "parsed-by-api1" : "/m?\(index)"))
            let head = server.head("/m?\(index)")
            #expect(HeadRecordingServer.fields("X-Common", in: head) == ["api\(which)"], "\(head)")
            #expect(HeadRecordingServer.fields("Accept", in: head) == [["application/json", "text/api1", "text/api2"][which]], "\(head)")
        }
    }

    /// A parser whose `Accept` changes after the API was made: each request asks what the
    /// parser says when it is built, not what it said when the API resolved its fields.
    final class SwitchingParser: ResponseParser, @unchecked Sendable {   // its one var behind the lock
        private let lock = NSLock()
        private var accept: String? = "text/one"
        var acceptHeader: String? { lock.withLock { accept } }
        func switchTo(_ value: String?) { lock.withLock { accept = value } }
        func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            try JSONDecoder().decode(type, from: response.body)
        }
    }

    @Test func aParsersAcceptAsItIsWhenTheRequestIsBuilt() async throws {
        let server = try HeadRecordingServer()
        let parser = SwitchingParser()
        let api = api(parser: parser)
        let url = server.url
        _ = try await send(api, .get(url + "/one")).get()
        parser.switchTo("text/two")
        _ = try await send(api, .get(url + "/two")).get()
        parser.switchTo("*/*")
        _ = try await send(api, .get(url + "/star")).get()
        var body = Data()
        for try await chunk in api.stream(route: .get(url + "/stream")) { body.append(chunk) }
        parser.switchTo("text/one")
        _ = try await send(api, .get(url + "/again")).get()
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/one")) == ["text/one"])
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/two")) == ["text/two"])
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/star")) == ["*/*"])
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/stream")) == ["*/*"])
        #expect(HeadRecordingServer.fields("Accept", in: server.head("/again")) == ["text/one"])
        for target in ["/one", "/two", "/star", "/stream", "/again"] {
            #expect(HeadRecordingServer.fields("X-Common", in: server.head(target)) == ["common"])
        }
    }

    /// Credentials among the common headers (`Authorization`, `Cookie`, a sensitive field) are
    /// dropped on a redirect to another origin, from that request alone: the next request to
    /// the origin sends them all again, exactly.
    @Test func commonCredentialsDroppedOnARedirectAreTheNextRequestsAgain() async throws {
        let server = try HeadRecordingServer()
        let common: HTTPHeaders = ["X-Common": "common", "Authorization": "Bearer common", "Cookie": "c=1", "X-Secret": "s"]
        let api = api(APIConfiguration(commonHeaders: common, retryPolicy: .never,
                                       redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-secret"])))
        let url = server.url
        for round in 0..<3 {
            #expect(try await send(api, .get(url + "/hop?\(round)")).get() == Reply(target: "/landed"))
            _ = try await send(api, .get(url + "/home?\(round)")).get()
        }
        let landed = server.heads(for: "/landed")
        #expect(landed.count == 3)
        for head in landed {
            for name in ["Authorization", "Cookie", "X-Secret"] {
                #expect(HeadRecordingServer.fields(name, in: head).isEmpty, "\(name) in \(head)")
            }
            #expect(HeadRecordingServer.fields("X-Common", in: head) == ["common"])
        }
        for round in 0..<3 {
            let head = server.head("/home?\(round)")
            #expect(HeadRecordingServer.fields("Authorization", in: head) == ["Bearer common"])
            #expect(HeadRecordingServer.fields("Cookie", in: head) == ["c=1"])
            #expect(HeadRecordingServer.fields("X-Secret", in: head) == ["s"])
        }
    }

    /// The API's own settings strict (a short timeout, one retry, no redirects, 2xx only), one
    /// request loosening them all: it gets what it asked; the default requests around it
    /// time out, are retried once, and take the 3xx as the refused answer.
    @Test func strictSettingsHoldForTheDefaultsAroundALooseRequest() async throws {
        let server = try HeadRecordingServer()
        // The timeout is two thirds of /slow's pause: a 503 and its retry must fit in it on a
        // loaded machine (at 0.5 s, URLSession's took longer once, in a full run).
        let configuration = APIConfiguration(commonHeaders: Self.common, timeout: 1,
                                             retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false),
                                             redirectPolicy: .never)
        let api = api(configuration)
        let url = server.url
        let loose = RequestOptions(timeout: 30, validation: .statusCodes(200..<600), retryPolicy: .never, redirectPolicy: .follow)
        for phase in ["before", "after"] {
            if phase == "after" {
                #expect(try await send(api, .get(url + "/slow?loose"), loose).get() == Reply(target: "/slow?loose"))
                #expect(try await send(api, .get(url + "/hop?loose"), loose).get() == Reply(target: "/landed"))
                let refused = try await (api.request(route: .get(url + "/s/503?loose"), options: loose) as Promise<Data>).value
                #expect(String(decoding: refused, as: UTF8.self) == #"{"target": "/s/503?loose"}"#)
            }
            guard case .failure(APIError.timeout(let timeout)) = await send(api, .get(url + "/slow?" + phase)) else {
                Issue.record("\(phase): no timeout")
                continue
            }
            #expect(timeout.interval == 1)
            guard case .failure(APIError.unacceptableStatus(let redirect)) = await send(api, .get(url + "/hop?" + phase)) else {
                Issue.record("\(phase): the redirect")
                continue
            }
            #expect(redirect.statusCode == 302)
            let answer = await send(api, .get(url + "/s/503?" + phase))
            guard case .failure(APIError.unacceptableStatus(let status)) = answer else {
                Issue.record("\(phase): the 503: \(answer)")
                continue
            }
            #expect(status.statusCode == 503)
            #expect(server.heads(for: "/s/503?" + phase).count == 2, "one attempt and one retry")
        }
        #expect(server.heads(for: "/s/503?loose").count == 1)
        #expect(server.heads(for: "/landed").count == 1, "only the loose request followed")
    }

    /// What an API keeps across requests is one, whether a request shares its settings or
    /// resolves its own: the retry budget (two retries in all, taken by whichever asks first)
    /// and the cookie jar (a cookie set to a request with options goes with a default one).
    @Test func theRetryBudgetAndTheJarAreTheAPIsForEveryRequest() async throws {
        let server = try HeadRecordingServer()
        let configuration = APIConfiguration(commonHeaders: Self.common,
                                             retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false),
                                             retryBudget: RetryBudget(ratio: 0, minimumRetries: 2, window: 600))
        let api = api(configuration)
        let url = server.url
        for index in 0..<6 {
            let options = index.isMultiple(of: 2) ? RequestOptions() : RequestOptions(headers: ["X-Own": "\(index)"])
            guard case .failure(APIError.unacceptableStatus(let failure)) = await send(api, .get(url + "/s/503?\(index)"), options) else {
                Issue.record("\(index)")
                continue
            }
            #expect(failure.statusCode == 503)
        }
        #expect((0..<6).map { server.heads(for: "/s/503?\($0)").count } == [2, 2, 1, 1, 1, 1], "two retries in the budget, in all")
        _ = try await send(api, .get(url + "/login"), RequestOptions(headers: ["X-Own": "1"])).get()
        _ = try await send(api, .get(url + "/after-login")).get()
        #expect(HeadRecordingServer.fields("Cookie", in: server.head("/after-login")) == ["jar=fromjar"])
        _ = try await send(api, .get(url + "/own-after-login"), RequestOptions(timeout: 20)).get()
        #expect(HeadRecordingServer.fields("Cookie", in: server.head("/own-after-login")) == ["jar=fromjar"])
    }

    /// The API's plugin sees every request, shared settings or not; a request's own plugin
    /// sees that request alone, and it is told after the API's.
    @Test func theAPIsPluginSeesEveryRequestARequestsOwnOnlyIts() async throws {
        let server = try HeadRecordingServer()
        let apiPlugin = EventPlugin(), ownPlugin = EventPlugin()
        let api = api(APIConfiguration(commonHeaders: Self.common, retryPolicy: .never, plugins: [apiPlugin]))
        let url = server.url
        _ = try await send(api, .get(url + "/p1")).get()
        _ = try await send(api, .get(url + "/p2"), RequestOptions(plugins: [ownPlugin])).get()
        _ = try await send(api, .get(url + "/p3")).get()
        _ = try await send(api, .get(url + "/p4"), RequestOptions(headers: ["X-Own": "1"])).get()
        #expect(apiPlugin.sent.items == ["/p1", "/p2", "/p3", "/p4"].map { url + $0 })
        #expect(ownPlugin.sent.items == [url + "/p2"])
        for target in ["/p1", "/p3"] { expectDefault(server.head(target)) }
    }

    /// An API released while its requests are in flight (shared settings and own alike): they
    /// settle as usual, and then the API is freed.
    @Test func anAPIReleasedInFlightIsFreedOnceItsRequestsSettle() async throws {
        let server = try HeadRecordingServer()
        let url = server.url
        var promises: [Promise<Reply>] = []
        let watched: WeakRef<AbstractAPI>
        do {
            let api = api()
            watched = WeakRef(api)
            for index in 0..<20 {
                let options = index.isMultiple(of: 2) ? RequestOptions() : RequestOptions(headers: ["X-Own": "\(index)"])
                promises.append(api.request(route: .get(url + "/slow?\(index)"), options: options))
            }
        }
        for (index, promise) in promises.enumerated() {
            #expect(try await promise.value == Reply(target: "/slow?\(index)"))
        }
        promises.removeAll()
        let deadline = Date().addingTimeInterval(30)
        while !watched.isFreed, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(watched.isFreed, "the API outlived its requests")
    }
}

extension SharedSettingsAttackTests {
    /// `BaseAPI` subclasses sharing one transport, two released while their requests (shared
    /// settings and own) are in flight: every request settles with its own API's fields, the
    /// released APIs are freed, and the one kept sends its own fields after.
    @Test func subclassesSharingATransportReleasedInFlight() async throws {
        let server = try HeadRecordingServer()
        let transport = TestTransport.make()
        let url = server.url
        let kept = try TestAPI(baseURL: url, parser: JSONParser(),
                               configuration: APIConfiguration(commonHeaders: ["X-Common": "kept"], retryPolicy: .never), transport: transport)
        var promises: [(String, Promise<Reply>)] = []
        var watched: [WeakRef<TestAPI>] = []
        do {
            let released = try (1...2).map { index in
                try TestAPI(baseURL: url, parser: JSONParser(),
                            configuration: APIConfiguration(commonHeaders: ["X-Common": "released\(index)"], retryPolicy: .never), transport: transport)
            }
            watched = released.map { WeakRef($0) }
            for index in 0..<30 {
                let api = index % 3 == 0 ? kept : released[index % 3 - 1]
                let options = index.isMultiple(of: 2) ? RequestOptions() : RequestOptions(headers: ["X-Own": "\(index)"])
                let target = "/slow?\(index)"
                promises.append((target, api.request(route: api.get(endpoint: target), options: options)))
            }
        }
        for (target, promise) in promises {
            #expect(try await promise.value == Reply(target: target))
        }
        promises.removeAll()
        for index in 0..<30 {
            let head = server.head("/slow?\(index)")
            let name = index % 3 == 0 ? "kept" : "released\(index % 3)"
            #expect(HeadRecordingServer.fields("X-Common", in: head) == [name], "\(head)")
            #expect(HeadRecordingServer.fields("X-Own", in: head) == (index.isMultiple(of: 2) ? [] : ["\(index)"]), "\(head)")
            #expect(HeadRecordingServer.fields("Accept", in: head) == ["application/json"], "\(head)")
        }
        let deadline = Date().addingTimeInterval(30)
        while watched.contains(where: { !$0.isFreed }), Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(watched.allSatisfy { $0.isFreed }, "a released API outlived its requests")
        _ = try await send(kept, kept.get(endpoint: "/kept-after")).get()
        #expect(HeadRecordingServer.fields("X-Common", in: server.head("/kept-after")) == ["kept"])
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
