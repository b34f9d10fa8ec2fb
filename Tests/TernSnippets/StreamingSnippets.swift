import Foundation
import Tern

// The Streaming Responses article's code, compiled (SnippetTests finds each block here).
enum StreamingSnippets {
    struct Prompt: Encodable, Sendable {
        let model: String
        let prompt: String
        let stream = true
    }

    static func completion(_ client: APIClient) async throws {
        let completion = client.stream(route: .post("/v1/completions"), parameters: JSONParameters(Prompt(model: "small", prompt: "A tern is")))
        for try await event in completion.events {
            if event.data == "[DONE]" { break }
            print(event.data, terminator: "")   // each token as it comes
        }
        completion.cancel()   // stops the transfer now, even in top-level code (below: leaving the loop)
    }

    struct Reading: Decodable, Sendable {
        let sensor: String
        let value: Double
    }

    static func linesAndValues(_ client: APIClient) async throws {
        for try await line in client.stream(route: .get("/logs/tail")).lines {
            print(line)
        }
        for try await reading in client.stream(route: .get("/export.ndjson")).values(of: Reading.self) {
            print(reading.sensor, reading.value)
        }
    }

    static func changes(_ client: APIClient) async throws {
        let reconnection = EventReconnection(delay: 1, maximumDelay: 30, maximumFailures: 10)
        for try await change in client.events(route: .get("/changes"), reconnection: reconnection) {
            print(change.lastEventID, change.type, change.data)
        }
    }

    /// Each event's data decoded as JSON in the loop, until the source ends (a 204); returns
    /// the readings.
    static func decodedEvents(_ client: APIClient) async throws -> [Reading] {
        var readings: [Reading] = []
        let decoder = JSONDecoder()
        for try await event in client.events(route: .get("/readings")) {
            let reading = try decoder.decode(Reading.self, from: Data(event.data.utf8))
            readings.append(reading)
        }
        return readings
    }

    static func callbacks(_ client: APIClient) -> Promise<Void> {
        let tail = client.stream(route: .get("/logs/tail")).lines.forEach(on: .main) { line in print(line) }
        tail.onError { error in print(error) }
        return tail
    }

    struct StreamReport: Plugin {
        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .didReceive(.success(let head), _):
                print("head", head.metrics.count, head.metrics.last?.firstByte ?? head.duration)
            case .didEndStream(let stream, let error):
                print("end", stream.duration, stream.metrics.last?.bytesReceived ?? 0, error.map { "\($0)" } ?? "whole")
            case .didRetry(let request, let retry, let delay):
                print("reconnection \(retry) to \(request.url?.path ?? "") in \(delay) s")
            default:
                break
            }
        }
    }

    static func report(_ client: APIClient) -> ResponseSequence<ServerSentEvent> {
        let reported = client.events(route: .get("/changes"), options: RequestOptions(plugins: [StreamReport()]))
        return reported
    }

    static func feed(_ client: APIClient) -> ResponseStream {
        let changes = client.stream(route: .get("/changes"), options: RequestOptions(streamBufferSize: 4 << 20, streamIdleTimeout: 120))
        return changes
    }
}
