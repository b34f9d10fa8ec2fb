import Synchronization
import Tern
import Foundation

/// The tour `tern-demo` runs with no argument: every kind of request, against a shop served in
/// this process.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
enum Tour {
    static func run() async throws {
        let elsewhere = try Elsewhere.start()
        let server = try DemoShop.start(elsewhere: elsewhere.baseURL)
        let api = ShopAPI(baseURL: server.baseURL)
        print("Tern demo: a shop on \(server.baseURL)\n")

        let products = try await api.products(page: 2).value
        print("products(page: 2)        → \(products.map(\.name))")

        let added = try await api.add(Product(id: 3, name: "Little tern", price: 7)).value
        print("add(_:)                  → \(added.name), \(added.price) €")

        let session = try await api.login(user: "ada", password: "tern").value
        print("login(user:password:)    → token \(session.token)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-demo.png")
        try Data(repeating: 0x89, count: 256 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let reports = Counter()
        let picture = try await api.upload(picture: file, for: 3)
            .onProgress(in: .global()) { if $0.direction == .upload, $0.fractionCompleted == 1 { reports.add() } }
            .value
        print("upload(picture:for:)     → the server got \(picture.bytes) bytes, caption \"\(picture.caption)\"; progress reached 100% \(reports.value)×")

        // A download cut halfway keeps its bytes (the server gave an ETag) and resumes from them.
        let export = FileManager.default.temporaryDirectory.appendingPathComponent("tern-demo-export.bin")
        defer { try? FileManager.default.removeItem(at: export) }
        if case .failure(let error) = await api.export(to: export).result, let resume = ResumableDownload.pending(for: export) {
            print("export(to:)              → cut off: \(resume.offset) bytes kept (\(type(of: error)))")
            let file = try await api.export(to: export, resumingFrom: resume).value
            let whole = try Data(contentsOf: file.fileURL) == DemoShop.export
            print("export(to:resumingFrom:) → \(file.response.statusCode), \(file.resumedBytes) bytes not fetched again, file intact: \(whole)")
        }

        try await api.delete(3).value
        print("delete(_:)               → done")

        // Pages, as an async sequence following the shop's Link headers; each requested when needed.
        var pages: [String] = []
        for try await page in api.client.pages(Shop.catalog, style: .linkHeader) {
            pages.append(page.elements.map(\.name).joined(separator: ", "))
        }
        print("pages(Shop.catalog)      → \(pages.count) pages: \(pages.joined(separator: " | "))")

        // Chaining, Osprey style, with a typed server error at the end of it.
        let failed = await api.login(user: "ada", password: "gull")
            .then { session in api.products(page: session.token.count) }
            .result
        if case .failure(APIError.unacceptableStatus(let failure)) = failed {
            print("login, then products     → \(failure.statusCode): \(failure.serverError(as: ShopError.self)?.message ?? "?")")
        }

        // Tern's own timeout, exact even where URLSession rounds to whole seconds.
        let started = Date()
        if case .failure(let error) = await api.slow().result {
            print("slow() with 0.3 s        → \(error) (after \(String(format: "%.2f", Date().timeIntervalSince(started))) s)")
        }

        // Expired credentials: three calls at once, one refresh, each call replayed once.
        let tokens = DemoTokens(baseURL: server.baseURL)
        api.client.delegate = tokens
        let orders = try await Promise.all([api.orders(), api.orders(), api.orders()], in: .global()).value
        print("orders() × 3, expired    → \(tokens.refreshCount) refresh, \(orders.count) answers")
        // A redirect to another origin: Tern follows it, and the shop's token stays home.
        let whoami = try await api.whoami().value
        print("whoami() → 302 elsewhere → Authorization there: \(whoami.authorization)")
        api.client.delegate = nil

        // A busy endpoint: retried with backoff, each step logged.
        let log = LoggerPlugin(level: .request) { line in print("                           \(line)") }
        let flaky = try await api.flaky(log: log).value
        print("flaky()                  → \(flaky.count) products after two 503s")

        // Cancellation reaches the network task: the shop sees its connection close. (A request
        // to a shop that is not answering: FoundationNetworking can crash when a cancel meets a
        // transfer that is just completing.)
        let pending = api.stalled()
        try await Task.sleep(nanoseconds: 50_000_000)
        pending.cancel()
        if case .failure(let error) = await pending.result { print("cancel()                 → \(error)") }

        server.stop()
        elsewhere.stop()
    }
}

/// Counts from any thread.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
