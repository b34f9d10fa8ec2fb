import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the `CredentialHeader*AttackTests` share: a delegate that signs with a key of the API's
/// own (under a header name it chooses, in any case) and rotates it when asked to refresh, and
/// the search of files on disk for a key's value.
enum CredentialHeaderAttack {
    /// The value of the header `name` (any case) in a raw request head, if it has one.
    static func header(_ name: String, in request: String) -> String? {
        let prefix = name.lowercased() + ":"
        return request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix(prefix) }
            .map { String($0.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces) }
    }

    /// Every regular file under `directory`, with what it holds.
    static func files(under directory: URL) -> [(URL, Data)] {
        let urls = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        return urls.compactMap { url in (try? Data(contentsOf: url)).map { (url, $0) } }
    }

    /// The files under `directory` that hold any of `secrets`, in clear, with the secret found.
    static func leaks(of secrets: [String], under directory: URL) -> [String] {
        files(under: directory).flatMap { url, data in
            secrets.filter { data.range(of: Data($0.utf8)) != nil }.map { "\(url.lastPathComponent) holds \($0)" }
        }
    }
}

/// Signs each request with its current key under `name` (as spelt), and on a refresh moves to
/// the next of `keys`, or to what `fetch` brings.
final class RotatingKeyDelegate: APIDelegate, Sendable {
    let name: String
    private let keys: Locked<[String]>
    private let fetch: (@Sendable () async throws -> String)?
    let refreshes = Locked(0)

    init(name: String = "X-Api-Key", keys: [String], fetch: (@Sendable () async throws -> String)? = nil) {
        self.name = name
        self.keys = Locked(keys)
        self.fetch = fetch
    }

    var key: String { keys.withLock { $0.first ?? "" } }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue(key, forHTTPHeaderField: name)
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        refreshes.withLock { $0 += 1 }
        guard let fetch else {
            keys.withLock { if $0.count > 1 { $0.removeFirst() } }
            return Promise(value: (), in: .global())
        }
        return Promise(in: .global()) { [self] in
            let fetched = try await fetch()
            keys.withLock { $0 = [fetched] }
        }
    }
}

/// An adapter that adds a key under `name` to every request.
struct KeyAdapter: RequestAdapter {
    let name: String
    let key: String

    func adapt(_ request: inout URLRequest) throws {
        request.setValue(key, forHTTPHeaderField: name)
    }
}
