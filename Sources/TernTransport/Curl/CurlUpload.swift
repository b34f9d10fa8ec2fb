#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// Where an exchange's request body comes from, and how much of it has gone: the bytes handed
/// to libcurl, those reported sent, and whether sending waits for more.
///
/// A stream or a file is read by a ``BodyPump`` from when the request is about to be written
/// (``start(ready:)``), not before: libcurl holds a transfer it has taken until a connection is
/// free (HTTPS, whose connections Tern leaves to libcurl to count), and an upload waiting its
/// turn that held its descriptor made many at once fail for want of one (see the Benchmarks
/// article). The loop thread's, in its exchange's ``CurlExchange/owned``.
struct CurlUpload {
    /// The body, as far as it has been read.
    enum Body {
        /// Bytes in memory, and how many of them libcurl has.
        case data(Data, offset: Int)
        /// A stream or file, not yet read.
        case source(BodyPump.Source)
        /// A stream or file, read ahead by the pump.
        case pumped(BodyPump)
    }

    /// `nil` for a request without a body, and once the body is closed.
    private(set) var body: Body?
    /// The body's length, when known.
    let length: Int64?
    /// A new source of a stream or file body, for reading it again from its start.
    private let remakeSource: (() throws -> BodyPump.Source)?
    /// The body bytes handed to libcurl.
    private(set) var readBytes: Int64 = 0
    /// The body bytes last reported sent.
    private var reportedBytes: Int64 = 0
    /// Whether libcurl holds sending paused, waiting for the body's next bytes.
    var isSendingPaused = false

    /// The body of `request`; making a stream's can fail.
    init(_ request: TransportRequest) throws {
        switch request.body {
        case .stream(let stream):
            body = .source(.stream(try stream.makeStream()))
            length = stream.length
            remakeSource = { .stream(try stream.makeStream()) }
        case .file(let file):
            body = .source(.file(file))
            // Its length now, from a regular file: it may have been swapped since it was checked.
            length = try RegularFile.size(of: file)
            remakeSource = { .file(file) }
        case .inRequest:
            remakeSource = nil
            if let data = request.urlRequest.httpBody {
                body = .data(data, offset: 0)
                length = Int64(data.count)
            } else {
                length = nil
            }
        }
    }

    /// Whether there is a body to send (until it is closed).
    var hasBody: Bool { body != nil }

    /// The request is about to be written: a stream or a file body starts being read ahead,
    /// `ready` called whenever it has bytes again after a read found none.
    mutating func start(ready: @escaping @Sendable () -> Void) {
        guard case .source(let source)? = body else { return }
        let pump = BodyPump(source, length: length, ready: ready)
        body = .pumped(pump)
        pump.start()
    }

    /// What a read found.
    enum Read {
        /// This many bytes were put in the buffer; 0 at the body's end.
        case bytes(Int)
        /// None yet: sending waits until the body has some.
        case waiting
        /// The body was never started (``start(ready:)``).
        case notStarted
        /// The body cannot be read, or is not its stated length.
        case failed(any Error)
    }

    /// Fills `buffer` with the next bytes of the body.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Read {
        switch body {
        case .data(let data, let offset):
            let count = min(buffer.count, data.count - offset)
            let start = data.startIndex + offset
            data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
            body = .data(data, offset: offset + count)
            readBytes += Int64(count)
            return .bytes(count)
        case .source:
            return .notStarted
        case .pumped(let pump):
            switch pump.take(into: buffer) {
            case .bytes(let count):
                readBytes += Int64(count)
                return .bytes(count)
            case .waiting:
                isSendingPaused = true
                return .waiting
            case .end:
                return .bytes(0)
            case .failed(let error):
                return .failed(error)
            }
        case nil:
            return .bytes(0)
        }
    }

    /// What a rewind did.
    enum Rewound {
        case done
        /// The body could not be made again.
        case failed(any Error)
        /// The body may not, or cannot, be sent again.
        case cannot
    }

    /// Whether the body can be taken back to its start for a request with `method`: one
    /// ``rewind(method:)`` would not refuse, though reading a stream or file again may still fail.
    func mayRewind(method: String) -> Bool {
        guard HTTPMethod(rawValue: method).isIdempotent else { return false }
        if case .pumped = body { return remakeSource != nil }
        return true
    }

    /// Takes the body back to its start, for a request with `method`. Only for an idempotent
    /// method: a POST, which the server may have acted on, is not sent again unasked.
    mutating func rewind(method: String) -> Rewound {
        guard HTTPMethod(rawValue: method).isIdempotent else { return .cannot }
        return restart()
    }

    /// Takes the body back to its start, whatever the method: only for a body the server cannot
    /// have acted on (``rewind(method:)`` asks first), such as one cut short because a file of
    /// it could not be opened.
    mutating func restart() -> Rewound {
        switch body {
        case .data(let data, _):
            body = .data(data, offset: 0)
        case .pumped(let pump):
            pump.close()
            guard let remakeSource else { return .cannot }
            do {
                body = .source(try remakeSource())
            } catch {
                body = nil
                return .failed(error)
            }
        case .source, nil:
            break
        }
        // The new attempt starts unpaused, its body read anew and reported anew: reported only
        // past the first send's count, a body sent again said nothing while it went, and the
        // idle timeout gave up a slow one (the caller's progress never goes back; it drops
        // what is not past what it reported).
        readBytes = 0
        reportedBytes = 0
        isSendingPaused = false
        return .done
    }

    /// Stops reading the body and closes its stream or file, if it was opened.
    mutating func close() {
        if case .pumped(let pump) = body { pump.close() }
        body = nil
    }

    /// How many body bytes to report sent, when libcurl counts `sent`, or `nil` for no report:
    /// never more than were read from the body (libcurl's count of a chunked body includes the
    /// chunks' framing), never the same twice in one send of the body (counted from 0 again
    /// once it is taken back to its start), and none once the head has come.
    mutating func report(sent: Int64, headHasCome: Bool) -> Int64? {
        let sent = min(sent, readBytes)
        guard body != nil, !headHasCome, sent > reportedBytes else { return nil }
        reportedBytes = sent
        return sent
    }
}

/// The exchange's side of its upload: libcurl's read and seek callbacks, what was sent, and
/// sending resumed. On the loop's thread.
extension CurlExchange {
    /// The request is about to be written: a stream or a file body starts being read ahead.
    func startBody() {
        upload.start { [weak self, loop] in
            if let self { loop.resumeSending(self) }
        }
    }

    /// What the read callback tells libcurl.
    enum BodyRead {
        /// This many bytes were put in its buffer; 0 at the body's end.
        case bytes(Int)
        /// None yet: sending waits until the body has some.
        case pause
        case abort
    }

    /// Fills `buffer` with the next bytes of the body.
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        switch upload.read(into: buffer) {
        case .bytes(let count):
            return .bytes(count)
        case .waiting:
            return .pause
        case .notStarted:
            // A libcurl older than 7.80 says nothing before it asks for the body.
            startBody()
            return readBody(into: buffer)
        case .failed(let error):
            stop = .body(error)
            return .abort
        }
    }

    /// What the seek callback tells libcurl.
    enum Rewound: Int32 {
        case done = 0
        case failed = 1
        case cannot = 2
    }

    /// Takes the body back to its start, when libcurl sends the request again on a new
    /// connection: the one it reused closed, or an HTTP/2 server refused the stream, before any
    /// byte of an answer. Only for an idempotent method: a POST, which the server
    /// may have acted on, fails as connection lost (``CurlCode/rewindFailed``), and whether it
    /// is sent again is the retry policy's to decide.
    func rewindBody(to offset: Int64, from origin: Int32) -> Rewound {
        guard offset == 0, origin == SEEK_SET else { return .cannot }
        switch upload.rewind(method: method) {
        case .done:
            return .done
        case .cannot:
            return .cannot
        case .failed(let error):
            stop = .body(error)
            return .failed
        }
    }

    /// Goes on sending once the body has bytes again; on the loop's thread, while libcurl runs
    /// the transfer (see ``CurlLoop/resumeSending(_:)``).
    func resumeSending() {
        guard upload.isSendingPaused, !hasGivenBackItsHandle else { return }
        upload.isSendingPaused = false
        let receivingPaused = response.isReceivingPaused
        _ = CurlLibrary.exitWaits { curl.pointee.easy_pause(easy, receivingPaused ? CurlPause.receive : CurlPause.none) }
    }

    /// The body bytes libcurl has sent.
    func sentBytes() -> Int64 {
        var sent: Int64 = 0
        tern_curl_getinfo_offset(curl, easy, CurlInfo.uploadedBytes, &sent)
        return sent
    }

    /// Reports `sent` body bytes, as libcurl counts them (see ``CurlUpload/report(sent:headHasCome:)``).
    func reportUpload(_ sent: Int64) {
        let headHasCome = response.head.isComplete
        guard let sent = upload.report(sent: sent, headHasCome: headHasCome) else { return }
        receiver.didSendBodyData(sent, of: upload.length)
    }
}
#endif
