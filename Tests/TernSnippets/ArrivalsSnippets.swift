import Foundation
import Synchronization
import Tern
import TernTesting

// TernTesting.md: a LoopbackServer's requests kept by the test, and an event stream served
// (run by `ReadmeTests.aLoopbackServerKeepsWhatArrivedAndServesEvents`).

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class Arrivals: Sendable {
    let requests = Mutex<[RecordedRequest]>([])
}

enum ArrivalsSnippets {
    /// The events a client read from the server, and the paths that reached it.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    static func liveEvents() async throws -> (events: [String], paths: [String]) {
        let arrivals = Arrivals()
        let live = try LoopbackServer { request in
            arrivals.requests.withLock { $0.append(request) }
            return ServerResponse(status: 200, headers: ["Content-Type": "text/event-stream"], body: Data("data: shipped\n\n".utf8))
        }
        defer { live.stop() }
        let client = APIClient(configuration: APIConfiguration(baseURL: live.baseURL), responseQueue: .global())
        var events: [String] = []
        for try await event in client.stream(route: .get("/orders/live")).events { events.append(event.data) }
        return (events, arrivals.requests.withLock { $0.map(\.path) })
    }
}
