import Foundation
import Testing
@testable import Tern
import TernTesting

/// A stream whose validation accepts a 3xx the pipeline does not follow: a `304`, a `300`, a
/// `302` without `Location`, or any redirect under `RedirectPolicy.never`, with
/// `Validation.statusCodes(200..<400)` (a common reading of "success") or `.acceptAll`.
///
/// README: "every promise settles exactly once with a typed APIError"; StreamingResponses.md: a
/// stream's iteration "ends when the body does, or throws the ``APIError`` that ended it", and
/// `RequestOptions(streamIdleTimeout:)` "ends the stream ... when for that long no byte comes".
/// Here the head's promise settles (with the 3xx), but iterating never ends, not at the body's
/// end, not at the idle timeout (the test gives it 10 s; the default is 60): it waits for ever.
/// `RequestExecution.openStream(_:measured:of:)` opens no stream on a 3xx, so the body goes to
/// the collector's memory as a redirect's would; `evaluate` then finds no redirect to follow,
/// validation accepts, and `finish(.answered(...))` settles the head, while the `StreamBuffer`
/// is never opened, finished nor timed. Both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AcceptedThreeHundredStreamAttackTests {
    static let cases: [(status: String, followsRedirects: Bool)] = [
        ("304 Not Modified", true),
        ("300 Multiple Choices", true),
        ("302 Found", true),   // no Location: nothing to follow
        ("307 Temporary Redirect\r\nLocation: /elsewhere", false),
    ]

    @Test(arguments: cases.indices)
    func aStreamAnsweredWithAnAccepted3xxEnds(index: Int) async throws {
        let (status, followsRedirects) = Self.cases[index]
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            // A 304 has no body; the others a short one.
            let body = status.hasPrefix("304") ? "" : "data: a\n\n"
            connection.send("HTTP/1.1 \(status)\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            _ = connection.readAvailable(for: 30)   // the connection stays open
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let options = RequestOptions(validation: .statusCodes(200..<400), redirectPolicy: followsRedirects ? nil : .never, streamIdleTimeout: 10)
        let stream = api.stream(route: .get(server.baseURL + "/feed"), options: options)
        let outcome = Locked<String?>(nil)
        let reading = Task.onTestThreads {
            var body = ""
            do {
                for try await chunk in stream { body += String(decoding: chunk, as: UTF8.self) }
                outcome.withLock { $0 = "ended with \(body.debugDescription)" }
            } catch let error as APIError {
                outcome.withLock { $0 = "failed \(error.caseName)" }
            } catch {
                outcome.withLock { $0 = "failed untyped \(error)" }
            }
        }
        let head = try await stream.response.value
        #expect(head.statusCode == Int(status.prefix(3)))
        let ended = await eventually(timeout: 15) { outcome.withLock { $0 } != nil }
        #expect(ended, "\(status.prefix(3)): the stream's iteration did not end within 15 s (idle timeout 10 s)")
        if let outcome = outcome.withLock({ $0 }) { #expect(!outcome.contains("untyped"), "\(outcome)") }
        reading.cancel()
        stream.cancel()
    }

    /// A body larger than the stream's ceiling (4 MiB, what it holds for a transport that cannot
    /// pause), already read into memory within the response's size limit: the reader gets it
    /// whole, then the end, not ``APIError/responseTooLarge(_:)`` blaming the transport.
    @Test func aLargeBodyOfAnAccepted300ComesWhole() async throws {
        let body = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ $0 >> 13) }
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 300 Multiple Choices\r\nContent-Type: application/octet-stream\r\nContent-Length: \(body.count)\r\n\r\n")
            else { return }
            _ = connection.send(body)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let stream = api.stream(route: .get(server.baseURL + "/choices"), options: RequestOptions(validation: .statusCodes(200..<400)))
        var (received, outcome) = ([UInt8](), "end")
        do {
            for try await chunk in stream { received.append(contentsOf: chunk) }
        } catch let error as APIError {
            outcome = "\(error)"
        }
        #expect(outcome == "end")
        #expect(received.count == body.count)
        // Where the bytes first differ: `==` on 6 MiB arrays makes Swift Testing diff them.
        #expect(received.indices.first { received[$0] != body[$0] } == nil)
    }

    /// A 3xx the app accepts whose body stops half way (the server holds the connection): the
    /// reader got the first second's bytes and a normal end, since a head that opens no stream
    /// was read for a second only (meant for a refusal's error text). Now its body is read whole
    /// or the request fails typed (here at its timeout), never delivered cut short as whole.
    @Test func anAccepted300WhoseBodyStopsHalfWayIsNotDeliveredAsWhole() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 300 Multiple Choices\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n"),
                  connection.send([UInt8](repeating: 0x61, count: 1000))
            else { return }
            _ = connection.readAvailable(for: 30)   // the other 1,000 bytes never come
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 4, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let stream = api.stream(route: .get(server.baseURL + "/choices"), options: RequestOptions(validation: .statusCodes(200..<400)))
        var (received, outcome) = (0, "end")
        do {
            for try await chunk in stream { received += chunk.count }
        } catch let error as APIError {
            outcome = error.caseName
        }
        #expect(outcome == "timeout", "\(received) bytes, then \(outcome)")
        #expect(received == 0)
    }
}
