#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// One client connection of a ``LoopbackServer``: reads requests, writes responses.
final class Connection {
    private let socket: Int32
    private let bodyLimit: Int
    private var buffer = Data()

    init(_ socket: Int32, bodyLimit: Int) {
        self.socket = socket
        self.bodyLimit = bodyLimit
    }

    /// Reads the next request, or `nil` when the client closed the connection or sent garbage.
    func readRequest() -> RecordedRequest? {
        guard let headEnd = readUntil(Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: buffer[buffer.startIndex..<headEnd], as: UTF8.self)
        consume(through: headEnd + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers = HTTPHeaders()
        var fields: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append((name, value))
        }
        headers = HTTPHeaders(fields)
        if headers["Expect"]?.lowercased() == "100-continue" {
            guard send(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        var body = BodySink(limit: bodyLimit)
        if headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            guard readChunkedBody(into: &body) else { return nil }
        } else {
            guard let length = Int(headers["Content-Length"] ?? "0"), read(count: length, into: &body) else { return nil }
        }
        return RecordedRequest(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers,
                               body: body.kept, bodyLength: body.length)
    }

    /// Writes a response as its behavior says. Returns `false` when the connection must close.
    func write(_ response: ServerResponse) -> Bool {
        switch response.behavior {
        case .hangUp:
            return false
        case .stall(let seconds):
            waitForClose(upTo: seconds)
            return false
        case .delayed(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return send(Self.head(of: response) + response.body)
        case .truncated(let count):
            _ = send(Self.head(of: response) + response.body.prefix(count))
            return false
        case .stalled(let count, let seconds):
            if send(Self.head(of: response) + response.body.prefix(count)) { waitForClose(upTo: seconds) }
            return false
        case .endless:
            var headers = response.headers
            headers["Connection"] = "close"
            var sent = 0
            guard !response.body.isEmpty, send(Self.head(of: response.status, headers, response.repeatedFields)) else { return false }
            while sent < 1 << 26, send(response.body) { sent += response.body.count }
            return false
        case .endlessHead:
            var sent = 0
            guard send(Data("HTTP/1.1 \(response.status) Flood\r\n".utf8)) else { return false }
            while sent < 1 << 26, send(Data("X-Flood-\(sent): \(String(repeating: "a", count: 64))\r\n".utf8)) { sent += 80 }
            return false
        case .repeated(let times):
            let times = max(times, 0)
            var headers = response.headers
            headers["Content-Length"] = String(response.body.count * times)
            guard send(Self.head(of: response.status, headers, response.repeatedFields)) else { return false }
            for _ in 0..<times where !send(response.body) { return false }
            return true
        case .normal:
            return send(Self.head(of: response) + response.body)
        }
    }

    private static func head(of response: ServerResponse) -> Data {
        var headers = response.headers
        headers["Content-Length"] = String(response.body.count)
        return head(of: response.status, headers, response.repeatedFields)
    }

    private static func head(of status: Int, _ headers: HTTPHeaders, _ repeated: [(name: String, value: String)]) -> Data {
        let reason = HTTPURLResponse.localizedString(forStatusCode: status).capitalized
        let lines = (headers.map { ($0.name, $0.value) } + repeated).map { "\($0): \($1)\r\n" }.joined()
        return Data("HTTP/1.1 \(status) \(reason)\r\n\(lines)\r\n".utf8)
    }

    // MARK: Reading

    /// Reads until `marker` is in the buffer; returns where it starts.
    private func readUntil(_ marker: Data) -> Int? {
        var searchFrom = buffer.startIndex
        while true {
            if let range = buffer.range(of: marker, in: searchFrom..<buffer.endIndex) { return range.lowerBound }
            searchFrom = max(buffer.startIndex, buffer.endIndex - marker.count)
            guard fill() else { return nil }
        }
    }

    /// Moves exactly `count` bytes into `body`, as they arrive.
    private func read(count: Int, into body: inout BodySink) -> Bool {
        var remaining = count
        while remaining > 0 {
            if buffer.isEmpty, !fill() { return false }
            let take = min(remaining, buffer.count)
            body.append(buffer.prefix(take))
            consume(through: buffer.startIndex + take)
            remaining -= take
        }
        return true
    }

    private func readLine() -> String? {
        guard let end = readUntil(Data("\r\n".utf8)) else { return nil }
        let line = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
        consume(through: end + 2)
        return line
    }

    private func readChunkedBody(into body: inout BodySink) -> Bool {
        while true {
            guard let line = readLine(),
                  let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
            if size == 0 {
                // Trailers, if any, end with an empty line.
                while let trailer = readLine(), !trailer.isEmpty {}
                return true
            }
            guard read(count: size, into: &body), readLine() != nil else { return false }
        }
    }

    /// Drops the buffer's bytes before `index`. A new buffer is made of what is left: removing a
    /// prefix in place would keep the whole backing store, which then grows with every read.
    private func consume(through index: Data.Index) {
        buffer = index >= buffer.endIndex ? Data() : Data(buffer[index...])
    }

    /// Reads whatever has arrived; `false` at the end of the stream or on an error.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var count = recv(socket, &chunk, chunk.count, 0)
        // A signal is not the end of the stream: closing then would answer a request with nothing
        // ("Empty reply from server"), which the thread sanitizer's run once showed.
        while count < 0 && errno == EINTR { count = recv(socket, &chunk, chunk.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Waits until the client closes the connection, or `seconds` pass.
    private func waitForClose(upTo seconds: TimeInterval) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) >= 0 || errno == EINTR else { return }
            if descriptor.revents != 0 && !fill() { return }
        }
    }

    // MARK: Writing

    private func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < bytes.count {
                let sent = Socket.send(socket, bytes.baseAddress! + offset, bytes.count - offset)
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }
}

/// A request body as it arrives: kept up to a limit, counted in full.
private struct BodySink {
    let limit: Int
    var kept = Data()
    var length = 0

    mutating func append(_ bytes: Data) {
        length += bytes.count
        if kept.count < limit { kept.append(bytes.prefix(limit - kept.count)) }
    }
}
