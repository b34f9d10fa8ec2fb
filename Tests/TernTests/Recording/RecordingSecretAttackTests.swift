import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Secrets where a recording could let one through: a token in a redirect's `Location` before
/// anything named it, a password in the URL, a refreshed token in the answer that issued it,
/// repeated `Set-Cookie` fields, a token echoed escaped or percent-encoded. Each recorded from a
/// real loopback server; the file is searched for every secret; replay does not need them.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingSecretAttackTests {
    func recorder(_ file: URL, secrets: [String] = []) throws -> RecordingTransport {
        try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: RecordingOptions(secrets: secrets))
    }

    func text(of file: URL) throws -> String { try String(contentsOf: file, encoding: .utf8) }

    /// `path` replayed from `file`, with none of the secrets it was recorded with.
    func replayed(_ path: String, from file: URL, baseURL: String) async throws -> Product {
        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        return try await replaying.request(route: replaying.get(endpoint: path)).value
    }

    /// The token first seen in a redirect's `Location`, named as a secret only in the query of
    /// the hop after: hidden in both entries.
    @Test func aTokenInARedirectsLocationIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let server = try LoopbackServer { request in
            request.path == "/login" ? ServerResponse(status: 302, headers: ["Location": "/home?access_token=\(token)"]) : .json(#"{"name": "tern", "price": 1}"#)
        }
        let baseURL = server.baseURL
        let api = try TestAPI(baseURL: baseURL, transport: recorder(file, secrets: ["access_token"]))
        let recorded: Product = try await api.request(route: api.get(endpoint: "/login")).value
        server.stop()
        #expect(!(try text(of: file).contains(token)), "the token is in the recording")

        #expect(try await replayed("/login", from: file, baseURL: baseURL) == recorded)
    }

    /// `https://user:password@host`: the password is a credential, in whatever URL it is written.
    @Test func aPasswordInTheURLIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let password = "pw-\(UUID().uuidString)"
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1}"#) }
        let baseURL = server.baseURL.replacingOccurrences(of: "://", with: "://alice:\(password)@")
        let api = try TestAPI(baseURL: baseURL, transport: recorder(file))
        let recorded: Product = try await api.request(route: api.get(endpoint: "/me")).value
        server.stop()
        #expect(!(try text(of: file).contains(password)), "the password is in the recording")

        let otherPassword = baseURL.replacingOccurrences(of: password, with: "another")
        #expect(try await replayed("/me", from: file, baseURL: otherPassword) == recorded)
    }

    /// With no secret named: a token a response issued, then sent as `Authorization`, is hidden
    /// in the response that issued it too, although that was recorded first.
    @Test func aTokenSentAsAuthorizationIsHiddenWhereItWasIssuedBefore() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "access-\(UUID().uuidString)"
        let server = try LoopbackServer { request in
            request.path == "/token" ? .json(#"{"access_token": "\#(token)", "expires_in": 3600}"#) : .json(#"{"name": "tern", "price": 1}"#)
        }
        let baseURL = server.baseURL
        let api = try TestAPI(baseURL: baseURL, transport: recorder(file))
        let _: Data = try await api.request(route: api.post(endpoint: "/token")).value
        let _: Product = try await api.request(route: api.get(endpoint: "/me"), parameters: URLParameters([:], headers: ["Authorization": "Bearer \(token)"])).value
        server.stop()
        #expect(!(try text(of: file).contains(token)), "the token is in the recording")
    }

    /// A binary answer, kept as Base64 (it is no text), that carries the token sent as
    /// `Authorization` among its bytes: hidden there too, in the answer recorded before the
    /// token was sent as well as after.
    @Test func aTokenInABinaryAnswerIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "bin-\(UUID().uuidString)"
        let binary = Data([0xFF, 0xD8, 0x00]) + Data(token.utf8) + Data([0x00, 0xFF])
        let server = try LoopbackServer { _ in ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: binary) }
        let api = try TestAPI(baseURL: server.baseURL, transport: recorder(file))
        let before: Data = try await api.request(route: api.get(endpoint: "/before")).value
        let after: Data = try await api.request(route: api.get(endpoint: "/after"), parameters: URLParameters([:], headers: ["Authorization": "Bearer \(token)"])).value
        server.stop()
        #expect(before == binary && after == binary)
        let bodies = try recordedEntries(in: file).compactMap { entry -> Data? in
            guard let content = (entry["response"] as? [String: Any])?["content"] as? [String: Any],
                  content["encoding"] as? String == "base64", let text = content["text"] as? String else { return nil }
            return Data(base64Encoded: text)
        }
        #expect(bodies.count == 2, "both answers kept as Base64")
        #expect(!bodies.contains { $0.range(of: Data(token.utf8)) != nil }, "the token is in a recorded body")
        #expect(!(try text(of: file).contains(token)))
    }

    /// A small multipart form, kept as Base64 (it is no text): a secret named, in a field of its
    /// own, and the token of the `Authorization` sent, in another, are hidden in it too; replayed
    /// with the body matched and other values, it answers.
    @Test func aSecretInAMultipartFormIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (password, token) = ("pw-\(UUID().uuidString)", "tok-\(UUID().uuidString)")
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1}"#) }
        let baseURL = server.baseURL
        func upload(_ api: TestAPI, password: String, token: String) async throws -> Product {
            let form = MultipartParameters(parts: [Part(name: "note", value: "a tern"), Part(name: "password", value: password),
                                                   Part(name: "echo", value: "sent with \(token)")],
                                           headers: ["Authorization": "Bearer \(token)"])
            return try await api.request(route: api.post(endpoint: "/upload"), parameters: form).value
        }
        let options = RecordingOptions(matchesBody: true, secrets: ["password"])
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let recorded = try await upload(recording, password: password, token: token)
        server.stop()
        let text = try text(of: file)
        // Every Base64 body decoded, as whoever reads the file would.
        let bodies = try recordedEntries(in: file).compactMap { (($0["request"] as? [String: Any])?["postData"] as? [String: Any])?["text"] as? String }
        let decoded = bodies.compactMap { Data(base64Encoded: $0).map { String(decoding: $0, as: UTF8.self) } }.joined()
        for secret in [password, token] {
            #expect(!text.contains(secret) && !decoded.contains(secret), "\(secret) is in the recording")
        }
        #expect(decoded.contains("a tern"))

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        #expect(try await upload(replaying, password: "another-password", token: "another-token") == recorded)
    }

    /// Two cookies set in two `Set-Cookie` fields of one response: neither value is kept.
    @Test func everyCookieOfARepeatedSetCookieIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (first, second) = ("one-\(UUID().uuidString)", "two-\(UUID().uuidString)")
        let server = try LoopbackServer { _ in
            var response = ServerResponse.json(#"{"name": "tern", "price": 1}"#)
            response.repeatedFields = [("Set-Cookie", "a=\(first); Path=/; HttpOnly"), ("Set-Cookie", "b=\(second); Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/")]
            return response
        }
        let api = try TestAPI(baseURL: server.baseURL, transport: recorder(file))
        let _: Product = try await api.request(route: api.get(endpoint: "/login")).value
        server.stop()
        let text = try text(of: file)
        #expect(!text.contains(first) && !text.contains(second), "a cookie is in the recording")
    }

    /// A token with `/` and `+` in it, sent as `Authorization`, and echoed by the server as JSON
    /// writes it (`\/`) and in a `Link` as a URL writes it (`%2F`): hidden in each spelling.
    @Test func aTokenIsHiddenHoweverItIsSpelt() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let secret = "ab/cd+\(UUID().uuidString.prefix(8))/ef=="
        let escaped = secret.replacingOccurrences(of: "/", with: #"\/"#)
        let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret
        let server = try LoopbackServer { _ in
            var response = ServerResponse.json(#"{"name": "tern", "price": 1, "you": "Bearer \#(escaped)"}"#)
            response.headers["Link"] = "</items?page=2&t=\(encoded)>; rel=\"next\""
            return response
        }
        let api = try TestAPI(baseURL: server.baseURL, transport: recorder(file))
        let _: Product = try await api.request(route: api.get(endpoint: "/me"), parameters: URLParameters([:], headers: ["Authorization": "Bearer \(secret)"])).value
        server.stop()
        let text = try text(of: file)
        for spelling in [secret, escaped, encoded] {
            #expect(!text.contains(spelling), "\(spelling) is in the recording")
        }
    }
    /// A secret's name written with JSON escapes (`\u0074` for `t`), in a body sent and in the
    /// answer: the same member to a JSON reader, and hidden like it.
    @Test func aSecretUnderAnEscapedMemberNameIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (sent, issued) = ("pw-\(UUID().uuidString)", "tok-\(UUID().uuidString)")
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1, "access_\u0074oken": "\#(issued)"}"#) }
        let api = try TestAPI(baseURL: server.baseURL, transport: recorder(file, secrets: ["access_token", "password"]))
        let body = BodyParameters(Data(#"{"pass\u0077ord": "\#(sent)"}"#.utf8), contentType: "application/json")
        let _: Product = try await api.request(route: .post(server.baseURL + "/login"), parameters: body).value
        server.stop()
        let text = try text(of: file)
        #expect(!text.contains(sent), "the password sent is in the recording")
        #expect(!text.contains(issued), "the token issued is in the recording")
    }
    /// A key the API names as a credential (`RedirectPolicy(sensitiveHeaders:)`, in another
    /// case), with no secret named to the recording: hidden in the file and in the error of a
    /// request the recording cannot answer; the recording replays.
    /// A secret named `api_key` is as secret spelt `API_KEY` or `Api_Key`: in the query, in a
    /// form, in a JSON body sent and in the answer, each value only six characters long, so
    /// found where it is named or not at all.
    @Test func aSecretNamedInAnotherCaseIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (query, form, json, issued) = ("qK3y0a", "fK3y0b", "jK3y0c", "iK3y0d")
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1, "Access_Token": "\#(issued)"}"#) }
        let api = try TestAPI(baseURL: server.baseURL, transport: recorder(file, secrets: ["api_key", "access_token", "password"]))
        let _: Product = try await api.request(route: .get(server.baseURL + "/a"), parameters: URLParameters(["API_KEY": query])).value
        let _: Product = try await api.request(route: .post(server.baseURL + "/b"), parameters: FormParameters(["PassWord": form])).value
        let body = BodyParameters(Data(#"{"user": {"Api_Key": "\#(json)"}}"#.utf8), contentType: "application/json")
        let _: Product = try await api.request(route: .post(server.baseURL + "/c"), parameters: body).value
        server.stop()
        let text = try text(of: file)
        for (value, place) in [(query, "query"), (form, "form"), (json, "JSON body"), (issued, "answer")] {
            #expect(!text.contains(value), "the \(place)'s key is in the recording")
        }
        // Hidden, each still answers on replay.
        let replayer = try RecordingTransport(file: file, mode: .replay)
        let replaying = try TestAPI(baseURL: server.baseURL, transport: replayer)
        let product: Product = try await replaying.request(route: .get(server.baseURL + "/a"), parameters: URLParameters(["API_KEY": "other"])).value
        #expect(product.name == "tern")
    }

    @Test func aKeyTheAPINamesSensitiveIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let key = "key-\(UUID().uuidString)"
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1}"#) }
        let baseURL = server.baseURL
        func api(_ transport: any Transport) -> AbstractAPI {
            let configuration = APIConfiguration(baseURL: baseURL, commonHeaders: ["X-Api-Key": key],
                                                 redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key"]))
            return AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
        }
        let recorded: Product = try await api(recorder(file)).request(route: .get("/me")).value
        server.stop()
        #expect(!(try text(of: file).contains(key)), "the key is in the recording")
        let replaying = api(try RecordingTransport(file: file, mode: .replay))
        #expect(try await replaying.request(route: .get("/me")).value == recorded)
        do {
            let _: Product = try await replaying.request(route: .get("/other")).value
            Issue.record("a request the recording does not hold was answered")
        } catch {
            #expect(!"\(error)".contains(key), "the key is in the error: \(error)")
        }
    }
}
