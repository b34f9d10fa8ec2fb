import Foundation

/// Parameters sent as a `multipart/form-data` body (RFC 7578), for forms with files.
///
/// ```swift
/// MultipartParameters(parts: [
///     Part(name: "picture", fileURL: pictureURL),   // typed by its extension
///     Part(name: "caption", value: "front"),
/// ])
/// ```
///
/// - Each request gets a new random boundary, checked not to occur in any part held in memory
///   (file parts are not read for that: 128 random bits make a clash vanishingly unlikely).
/// - File parts are never read whole into memory. On Linux the body is a ``BodyStream`` read
///   part by part as it is sent, its length the sum of the parts, with no
///   copy on disk; URLSession sends it from memory with its `Content-Length` up to 16 MiB, and
///   streamed, chunked, above (FoundationNetworking can stream a body only so). On Apple
///   platforms it is assembled into a temporary file in 1 MiB steps, uploaded from disk with its
///   `Content-Length` and deleted when the request ends; writing stops as soon as the request
///   is cancelled or times out. A retry sends the body again either way. Only regular files can
///   be parts: a device or a pipe never ends.
/// - Field names and file names are escaped as HTML does: `"` as `%22`, CR as `%0D`, LF as `%0A`.
public struct MultipartParameters: RequestParameters {
    /// The parts, in order.
    package var parts: [Part]
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// Creates a multipart body.
    public init(parts: [Part], headers: HTTPHeaders = [:]) {
        self.parts = parts
        self.headers = headers
    }

    /// Writes the parameters and their `Content-Type` into `draft`.
    public func encode(into draft: inout RequestDraft) throws {
        let boundary = try makeBoundary()
        let hasFiles = parts.contains { if case .file = $0.content { true } else { false } }
        if hasFiles {
            #if canImport(FoundationNetworking)
            let segments = try segments(boundary: boundary)
            draft.body = .stream(BodyStream(length: segments.reduce(0) { $0 + $1.length }) { SegmentStream(segments) })
            #else
            draft.body = .file(try writeFile(boundary: boundary, stoppingWhen: draft.endedCheck), isTemporary: true)
            #endif
        } else {
            var body = Data()
            for part in parts {
                body.append(try Self.header(of: part, boundary: boundary))
                if case .data(let data) = part.content { body.append(data) }
                body.append(Self.crlf)
            }
            body.append(Self.closing(boundary))
            draft.body = .data(body)
        }
        draft.headers["Content-Type"] = "multipart/form-data; boundary=\(boundary)"
    }

    /// A random boundary that occurs in no in-memory part.
    private func makeBoundary() throws -> String {
        for _ in 0..<8 {
            let boundary = "tern-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let marker = Data(boundary.utf8)
            let clashes = parts.contains { part in
                if case .data(let data) = part.content { data.range(of: marker) != nil } else { false }
            }
            if !clashes { return boundary }
        }
        // Eight clashes in a row mean the parts were built to contain our boundaries.
        throw APIError.encodingFailed(.init(parameter: "MultipartParameters", underlying: BoundaryClash()))
    }

    /// The body as pieces to read in turn, with each file's length as it is now; refuses a file
    /// part that is not a regular file.
    private func segments(boundary: String) throws -> [SegmentStream.Segment] {
        var segments: [SegmentStream.Segment] = []
        for part in parts {
            segments.append(.data(try Self.header(of: part, boundary: boundary)))
            switch part.content {
            case .data(let data):
                segments.append(.data(data))
            case .file(let file):
                let length = try APIError.catching({ .encodingFailed(.init(parameter: part.name, underlying: $0)) }) {
                    try regularFileSize(of: file)
                }
                segments.append(.file(file, length: length))
            }
            segments.append(.data(Self.crlf))
        }
        segments.append(.data(Self.closing(boundary)))
        return segments
    }

    /// Writes the body to a new temporary file, copying file parts in 1 MiB steps; stops, and
    /// deletes the file, as soon as the request has ended. Where URLSession uploads from files
    /// (Apple platforms); tested on Linux too.
    func writeFile(boundary: String, stoppingWhen ended: @Sendable () -> Bool) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tern-upload-\(UUID().uuidString)")
        do {
            let sink = try FileSink(url)
            defer { sink.close() }
            for part in parts {
                try sink.write(Self.header(of: part, boundary: boundary))
                switch part.content {
                case .data(let data): try sink.write(data)
                case .file(let file): try sink.copy(contentsOf: file, partName: part.name, stoppingWhen: ended)
                }
                try sink.write(Self.crlf)
            }
            try sink.write(Self.closing(boundary))
            return url
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw APIError.wrapping(error) { .encodingFailed(.init(parameter: "MultipartParameters", underlying: $0)) }
        }
    }

    private static let crlf = Data("\r\n".utf8)

    private static func closing(_ boundary: String) -> Data {
        Data("--\(boundary)--\r\n".utf8)
    }

    /// The boundary line and headers that open `part`.
    ///
    /// - Throws: ``APIError/InvalidRequest/Reason/invalidPartHeader(part:name:)`` when a header
    ///   or the media type holds a line break or another character HTTP forbids, which would
    ///   inject headers or parts.
    private static func header(of part: Part, boundary: String) throws(APIError) -> Data {
        var disposition = "form-data; name=\"\(escape(part.name))\""
        if let filename = part.filename { disposition += "; filename=\"\(escape(filename))\"" }
        var headers: HTTPHeaders = ["Content-Disposition": disposition]
        if let mimeType = part.mimeType { headers["Content-Type"] = mimeType.rawValue }
        headers.merge(part.headers)
        if let field = headers.firstInvalidField {
            throw .invalidRequest(.init(reason: .invalidPartHeader(part: part.name, name: field.name)))
        }
        let lines = headers.map { "\($0.name): \($0.value)\r\n" }.joined()
        return Data("--\(boundary)\r\n\(lines)\r\n".utf8)
    }

    /// Escapes a field or file name as HTML's form submission does.
    private static func escape(_ name: String) -> String {
        name.replacingOccurrences(of: "\"", with: "%22")
            .replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    struct BoundaryClash: Error, CustomStringConvertible {
        var description: String { "every random boundary tried occurs in a part" }
    }
}

/// Writes a new file in order, copying other files into it a chunk at a time.
private struct FileSink {
    private let handle: FileHandle
    private static let chunkSize = 1 << 20

    init(_ url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        handle = try FileHandle(forWritingTo: url)
    }

    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Copies a regular file a chunk at a time, so memory stays flat whatever its size: as many
    /// bytes as it had when it was sized, and no more once `ended` says the request is over. A
    /// file that then holds fewer or more (truncated, appended to, another renamed over it)
    /// fails the copy, as the body read from the file as it is sent fails: a part cut short,
    /// or cut at the old length of a longer file, would go framed as whole.
    ///
    /// A device or a pipe is refused, checked before it is opened and again as it is
    /// (``RegularFile``): `/dev/zero` never ends, and opening a FIFO blocks until something
    /// writes to it.
    func copy(contentsOf file: URL, partName: String, stoppingWhen ended: () -> Bool) throws {
        do {
            let size = try regularFileSize(of: file)
            let input = try RegularFile(file)
            defer { input.close() }
            var remaining = Int(size)
            var chunk = [UInt8](repeating: 0, count: min(Self.chunkSize, remaining))
            while remaining > 0 {
                let count = try chunk.withUnsafeMutableBytes { buffer in try buffer.baseAddress.map { try input.read(into: $0, count: min(buffer.count, remaining)) } ?? 0 }
                guard count > 0 else { throw BodyLengthMismatch(statedLength: size, actualLength: size - Int64(remaining)) }
                guard !ended() else { throw APIError.cancelled }
                try handle.write(contentsOf: chunk[..<count])
                remaining -= count
            }
            var extra: UInt8 = 0
            guard try input.read(into: &extra, count: 1) == 0 else { throw BodyLengthMismatch(statedLength: size, actualLength: size + 1) }
        } catch {
            throw APIError.wrapping(error) { .encodingFailed(.init(parameter: partName, underlying: $0)) }
        }
    }

    func close() {
        try? handle.close()
    }
}
