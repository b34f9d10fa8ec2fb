import Foundation
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The examples in the documentation comments of `Tern`'s features (pages, streams, downloads,
// credentials, plugins), compiled (see SymbolSnippets.swift).

extension SymbolSnippets {
    // MARK: Pages

    static func pages(api: ShopAPI) async throws {
        for try await page in api.pages(APIRequest<[Product]>(.get("/products")), style: .linkHeader) {
            show(page.elements)
        }
        _ = PageStyle
            .pageNumber()                                          // ?page=1, ?page=2, … until an empty page
        _ = PageStyle
            .pageNumber(parameter: "p", first: 0)
        _ = PageStyle
            .cursor(parameter: "after", from: .body("meta.next"))  // {"meta": {"next": "c2"}} → ?after=c2
        _ = PageStyle
            .cursor(parameter: "pageToken", from: .header("X-Next-Page-Token"))
        _ = PageStyle
            .linkHeader                                            // Link: <https://…?page=2>; rel="next"
    }

    // MARK: Streams

    struct Prompt: Encodable, Sendable { let text: String }

    static func streams(client: APIClient, prompt: Prompt) async throws {
        for try await line in client.stream(route: .get("/logs/tail")).lines {
            print(line)
        }
        for try await change in client.events(route: .get("/changes")) {
            print(change.lastEventID, change.data)
        }
        for try await event in client.stream(route: .post("/completions"), parameters: JSONParameters(prompt)).events {
            print(event.data, terminator: "")
        }
    }

    // MARK: Downloads

    @MainActor static func downloads(client: APIClient, api: ShopAPI, route: Route, destination: URL, bar: ProgressBar) async throws {
        let export = client.download(route: .get("/exports/2026.zip"), to: destination, replacing: true)
        for await progress in export.progressUpdates {   // on the main actor, as a screen's code runs
            bar.progress = progress.fractionCompleted ?? 0
        }
        show(try await export.value.fileURL)
        let resume = ResumableDownload.pending(for: destination)
        let file = try await api.download(route: route, to: destination, resumingFrom: resume).value
        show(file)
    }

    // MARK: Credentials

    /// Tokens, kept where the delegate's threads can share them.
    final class TokenBox: @unchecked Sendable {   // every access holds the lock
        private let lock = NSLock()
        private var tokens = (access: "access", refresh: "refresh")
        var access: String { lock.withLock { tokens.access } }
        var refresh: String { lock.withLock { tokens.refresh } }
        func store(_ new: (access: String, refresh: String)) { lock.withLock { tokens = new } }
    }

    /// The API that hands out tokens.
    struct AuthAPI: Sendable {
        func refresh(_ token: String) -> Promise<(access: String, refresh: String)> { Promise(value: ("access", token)) }
    }
    static let authAPI = AuthAPI()

    final class SessionStore: APIDelegate {
        let token = TokenBox()   // thread-safe: the delegate is called from background threads
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token.access)", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            Promise { self.token.store(try await authAPI.refresh(self.token.refresh).value) }
        }
    }

    static func delegate(api: ShopAPI, sessionStore: SessionStore) {
        api.delegate = sessionStore   // held by the API
    }

    // MARK: Plugins

    struct Metrics: Plugin {
        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .didReceive(.success(let response), _) = event else { return }
            print(api.configuration.name, response.statusCode, response.duration)
        }
    }

    /// A log, as the app's logging framework has one.
    struct Log: Sendable { func info(_ message: String) {} }

    @MainActor final class Spinner { var isHidden = true }

    @MainActor static func plugins(spinner: Spinner, logger log: Log) -> [APIClient] {
        let logger = LoggerPlugin(level: .verbose, redactingHeaders: ["X-Api-Key"], redactingQueryKeys: ["token"], includesCURL: true)
        let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", plugins: [logger]))
        return [client, activity(spinner: spinner), logging(log)]
    }

    @MainActor static func activity(spinner: Spinner) -> APIClient {
        let activity = NetworkActivity { count in DispatchQueue.main.async { spinner.isHidden = count == 0 } }
        let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", plugins: [activity]))
        return client
    }

    static func logging(_ logger: Log) -> APIClient {
        return APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", plugins: [
            LoggerPlugin(level: .response) { line in logger.info("\(line)") }
        ]))
    }
}
