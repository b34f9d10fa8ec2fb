import Foundation
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The examples in the library's documentation comments, which a symbol's page shows as an
// article shows its snippets: `SnippetTests` checks they appear in these files line for line.
// Compiled, not run; what they stand for runs in the suites of the features they show. An
// example already compiled for an article (`CannedTransport`, in TourSnippets) is not repeated.
// One file per module: this one for TernCore and TernTransport, with what the others share.

enum SymbolSnippets {
    typealias Product = Readme.Product
    typealias ShopError = Readme.ShopError
    struct User: Sendable {}

    /// The app an example assumes: its screens and its data.
    static func show(_ value: Any?) {}
    static func showEmpty() {}
    static func report(_ error: any Error) {}
    static func hideSpinner() {}

    /// An API as the promise examples call it.
    struct UsersAPI: Sendable {
        func user(id: Int) -> Promise<User> { Promise(value: User()) }
        func requestUser() -> Promise<User> { Promise(value: User()) }
        func favorites(of user: User) -> Promise<[String]> { Promise(value: ["tern"]) }
        func upload(_ photo: Data) -> Promise<String> { Promise(value: "receipt") }
        func products(page: Int) -> Promise<[Product]> { Promise(value: []) }
    }

    /// A progress bar, as a screen has one.
    @MainActor final class ProgressBar { var progress = 0.0 }

    /// Where files are kept, as an app's storage answers.
    struct Storage: Sendable { func size(of file: URL) async throws -> Int { 0 } }

    // MARK: TernCore

    static func promises(api: UsersAPI, user: User, background: DispatchQueue) async throws {
        api.user(id: 42)
            .then(in: background) { user in api.favorites(of: user) }
            .onSuccess { favorites in show(favorites) }
            .onError { error in report(error) }
            .finally { hideSpinner() }

        let favorites = try await api.favorites(of: user).value
        show(favorites)
    }

    static func makingPromises(session: URLSession, url: URL) -> [Any] {
        let answer = Promise<Int> { resolve, reject in
            DispatchQueue.global().async { resolve(42) }
        }
        let (promise, resolver) = Promise<Data>.pending()
        let task = session.dataTask(with: url) { data, _, error in
            if let data { resolver.fulfill(data) } else { resolver.reject(error ?? URLError(.unknown)) }
        }
        resolver.onCancel { task.cancel() }
        task.resume()
        return [answer, promise]
    }

    static func asyncPromise(storage: Storage, file: URL) -> Promise<Int> {
        let size = Promise { try await storage.size(of: file) }
        return size
    }

    static func chaining(api: UsersAPI) {
        _ =
        api.requestUser().then(api.favorites(of:))
    }

    static func progress(api: UsersAPI, photo: Data, upload: Promise<String>) async {
        api.upload(photo)
            .onProgress(in: .main) { progress in print("sent", progress.fractionCompleted ?? 0) }
            .onSuccess { receipt in show(receipt) }
        for await progress in upload.progressUpdates { print(progress.completedBytes) }
    }

    static func retrying(api: UsersAPI) -> Promise<User> {
        let user = Promise.retry(3, delay: 0.5) { api.user(id: 42) }
        return user
    }

    static func serverErrors(_ failure: APIError.StatusFailure) {
        struct ShopError: Error, Decodable { let code: Int; let message: String }
        print(failure.serverError(as: ShopError.self)?.message ?? "\(failure)")
    }

    static func errors(api: UsersAPI) {
        api.products(page: 1).onError { error in
            switch error as? APIError {
            case .cancelled?: break
            case .unacceptableStatus(let failure)? where failure.statusCode == 404: showEmpty()
            case .unacceptableStatus(let failure)?: show(failure.serverError(as: ShopError.self)?.message)
            default: show("\(error)")
            }
        }
    }

    static func sizeLimits() {
        _ =
        APIConfiguration(maximumResponseSize: .megabytes(16))
        _ =
        RequestOptions(maximumResponseSize: .unlimited)        // this one request may be any size
        _ =
        RequestOptions(maximumResponseSize: 4096)              // bytes
    }

    static func clock() {
        let clock = TestClock()
        let client = APIClient(configuration: .production, clock: clock)
        // … a request fails, and its retry waits
        clock.advance(by: 0.5)   // the retry's backoff has passed
        _ = client
    }

    static func headers() -> (HTTPHeaders, HTTPMethod) {
        var headers: HTTPHeaders = ["Accept": "application/json"]
        headers["accept"] = "text/plain"        // replaces it
        headers.merge(["X-Trace": "1"])         // later wins
        let purge: HTTPMethod = "PURGE"
        return (headers, purge)
    }

    // MARK: TernTransport

    static func bodyStream(size: Int64, recording: URL) {
        _ =
        BodyStream(length: size) { InputStream(url: recording)! }
    }

    static func cache(cachesDirectory: URL) throws -> [Any] {
        let cache = HTTPCache(maximumBytes: 20 << 20)                                   // in memory
        let kept = try HTTPCache(directory: cachesDirectory.appendingPathComponent("shop"))   // on disk
        let cached = APIConfiguration(baseURL: "https://shop.example/api/v2", cache: cache)
        return [kept, cached]
    }

    static func curl(ids: [Int]) async throws {
        let client = APIClient(configuration: .production, transport: try CurlTransport())
        await withTaskExecutorPreference(client.transport.taskExecutor) {
            for id in ids { _ = try? await client.request(route: .get("/items/\(id)")).value as Data }
        }
    }
}
