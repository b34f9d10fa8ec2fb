import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// The end-to-end workloads: GETs of the 1 KB array from a loopback server, each decoded.
/// The benchmark and the `EndToEndAB` harness run exactly these.
public enum EndToEnd {
    /// One request through Tern.
    public static func tern(_ api: ItemsAPI) async throws -> [Item] {
        try await api.items().value
    }

    /// One request with raw URLSession, a completion handler and JSONDecoder: the baseline.
    public static func raw(_ session: URLSession, _ url: URL) async throws -> [Item] {
        try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: url) { data, _, error in
                continuation.resume(with: Result {
                    if let error { throw error }
                    return try JSONDecoder().decode([Item].self, from: data ?? Data())
                })
            }.resume()
        }
    }

    /// Runs `count` requests one after another.
    public static func sequential(_ count: Int, _ request: () async throws -> [Item]) async throws {
        for _ in 0..<count { _ = try await request().count }
    }

    /// Runs `count` requests, `width` at a time: as many callers, each sending one request after
    /// another, as a load generator's connections do. (A task for each request, with one task
    /// refilling the group as each ended, cost every request two more task switches, which the
    /// C floor never pays.)
    public static func inFlight(_ width: Int, _ count: Int, _ request: @escaping @Sendable () async throws -> [Item]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<width {
                let share = count / width + (caller < count % width ? 1 : 0)
                group.addTask { for _ in 0..<share { _ = try await request().count } }
            }
            try await group.waitForAll()
        }
    }
}
