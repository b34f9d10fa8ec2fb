#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// An upload from a file answered with a redirect before the server has read a byte of its
/// body (then read and dropped): a `307` or `308` sends the file again, whole and once, to
/// where it leads; a `303` goes there as a GET with no body; the first URL is asked once.
/// Over the transport under test, from a raw socket that checks every byte.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct UploadRedirectWireAttackTests {
    static let contents = Data((0..<300_000).map { "line \($0)\n" }.joined().utf8.prefix(300_000))

    @Test(arguments: ["307 Temporary Redirect", "308 Permanent Redirect", "303 See Other"])
    func aRedirectAnsweredBeforeTheBodyIsReadSendsItOnceWhereItLeads(status: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-upload-redirect-\(UUID().uuidString).txt")
        try Self.contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let ups = Recorder<Int>()
        let landings = Recorder<(method: String, body: Data)>()
        let server = try RawServer { connection in
            while let head = connection.readHead() {
                let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
                if head.hasPrefix("POST /up ") {
                    ups.append(length)
                    connection.send("HTTP/1.1 \(status)\r\nLocation: /landed\r\nContent-Length: 0\r\n\r\n")
                    guard connection.discard(length, within: 20) == length else { return }
                } else {
                    var body = Data()
                    if length > 0 {
                        // What came past the head, then the rest.
                        let first = connection.readAvailable(for: 0.05, limit: length)
                        body.append(contentsOf: first)
                        while body.count < length {
                            let more = connection.readAvailable(for: 5, limit: length - body.count)
                            guard !more.isEmpty else { break }
                            body.append(contentsOf: more)
                        }
                    }
                    landings.append((String(head.prefix { $0 != " " }), body))
                    connection.send(RawServer.Connection.response("landed"))
                }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let answer: String = try await api.request(route: .post(server.baseURL + "/up"), parameters: BodyParameters(file, contentType: "text/plain")).value
        #expect(answer == "landed")
        #expect(ups.items == [Self.contents.count])
        let landed = landings.items
        #expect(landed.count == 1)
        if status.hasPrefix("303") {
            #expect(landed.first?.method == "GET" && landed.first?.body.isEmpty == true, "\(landed.map { ($0.method, $0.body.count) })")
        } else {
            #expect(landed.first?.method == "POST")
            #expect(landed.first?.body == Self.contents, "\(landed.map { ($0.method, $0.body.count) })")
        }
    }
}
#endif
