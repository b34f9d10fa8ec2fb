import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// A transport that answers from stubs instead of the network, so that everything else in a test
/// is the real pipeline: encoders, the delegate, refresh, retries, redirects, validation,
/// plugins, parsing, progress.
///
/// ```swift
/// let stubs = StubTransport()
/// stubs.add(Stub(.get, "/api/v2/products", answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#)))
/// let shop = ShopAPI(client: APIClient(configuration: .production, transport: stubs))
/// let products = try await shop.products(page: 1).value
/// #expect(stubs.requests.first?.queryItems.first?.value == "1")
/// ```
///
/// The first stub that matches a request answers it (stubs added later are tried first, so a
/// test can override a default). A request that matches none fails with an ``UnmatchedRequest``
/// that lists every stub and why it did not match. Every request is recorded, body included (a
/// file or stream body is read back).
public final class StubTransport: KeyPinningTransport, Sendable {
    private struct State {
        var stubs: [(stub: Stub, served: Int)] = []
        var requests: [RecordedRequest] = []
    }

    private let state = Locked(State())
    private let clock: any APIClock
    /// Where events are reported, one at a time.
    private let queue = Exchange.makeQueue()

    /// Creates a transport without stubs; answers with a delay wait on `clock` (real time by
    /// default; give the API's `TestClock` to control them).
    public init(clock: (any APIClock)? = nil) {
        self.clock = clock ?? SystemClock()
    }

    /// Adds a stub, tried before those added earlier.
    public func add(_ stub: Stub) {
        state.withLock { $0.stubs.insert((stub, 0), at: 0) }
    }

    /// Every request received, in order, bodies included.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// `true`: stubs answer without a server or its keys, so an API with
    /// `CertificatePins` runs on them as on `CurlTransport`, every pin passing.
    package var canPinKeys: Bool { true }

    /// Its own: a stub's made-up answer, kept by a cache shared with a real API, never answers it.
    package var trustMark: String? { "stubbed" }

    /// Starts sending `request` and reports its exchange to `receiver`.
    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let exchange = Exchange(receiver: receiver, queue: queue)
        let recorded: RecordedRequest
        do {
            recorded = try Self.record(request)
        } catch {
            queue.async { exchange.complete(with: error) }
            return exchange
        }
        let answer = state.withLock { state -> Result<StubAnswer, UnmatchedRequest> in
            state.requests.append(recorded)
            let segments = Stub.segments(of: recorded)
            if let index = state.stubs.firstIndex(where: { $0.stub.mismatch(with: recorded, segments: segments) == nil }) {
                let (stub, served) = state.stubs[index]
                state.stubs[index].served += 1
                return .success(stub.answer(to: recorded, served: served))
            }
            // Described only when nothing matched: a test with many stubs paid for every miss's
            // description on every request.
            let mismatches = state.stubs.map { (stub: $0.stub.description, reason: $0.stub.mismatch(with: recorded, segments: segments) ?? "") }
            return .failure(UnmatchedRequest(request: recorded, mismatches: mismatches))
        }
        let run: @Sendable () -> Void = { [clock] in exchange.run(answer, for: request, bodyLength: recorded.bodyLength, clock: clock) }
        if case .success(let answer) = answer, answer.delay > 0 {
            exchange.wait(exchange.schedule(after: answer.delay, on: clock, run))
        } else {
            queue.async(execute: run)
        }
        return exchange
    }

    /// The request as a server would record it: method, target, headers, and the whole body.
    static func record(_ request: TransportRequest) throws -> RecordedRequest {
        var body = Data()
        try eachPiece(ofBodyOf: request) { body += $0 }
        return recorded(request, body: body)
    }

    /// The request as a server would record it, with `body` (of `bodyLength` bytes) as its body.
    static func recorded(_ request: TransportRequest, body: Data, bodyLength: Int? = nil) -> RecordedRequest {
        let url = request.urlRequest.url
        let components = url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true) }
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        let headers = HTTPHeaders((request.urlRequest.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key })
        return RecordedRequest(method: request.urlRequest.httpMethod ?? "GET", target: target, headers: headers, body: body, bodyLength: bodyLength)
    }

    /// Hands `request`'s body to `take` a piece at a time, from memory, its file or its stream.
    static func eachPiece(ofBodyOf request: TransportRequest, _ take: (Data) throws -> Void) throws {
        switch request.body {
        case .inRequest:
            try take(request.urlRequest.httpBody ?? Data())
        case .file(let url):
            // Opened as the real transports open it: a file swapped for a pipe is refused, not
            // waited on, and one that changes length while read fails as there.
            let file = try RegularFile(url)
            defer { file.close() }
            try eachPiece(length: file.size, read: { try file.read(into: $0, count: $1) }, take)
        case .stream(let body):
            let stream = try body.makeStream()
            stream.open()
            defer { stream.close() }
            try eachPiece(length: body.length, read: { buffer, count in
                let read = stream.read(buffer.assumingMemoryBound(to: UInt8.self), maxLength: count)
                if read < 0 { throw stream.readFailure }
                return read
            }, take)
        }
    }

    /// The pieces `read` gives, to `take`, in pieces of at most 64 KiB; a source that gives more
    /// or fewer bytes than its `length` fails with ``BodyLengthMismatch``, read no further than
    /// one byte past it (a stream without end is never read for ever).
    private static func eachPiece(length: Int64?, read: (UnsafeMutableRawPointer, Int) throws -> Int, _ take: (Data) throws -> Void) throws {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var total: Int64 = 0
        while true {
            let wanted = length.map { Int(min(Int64(buffer.count), $0 - total + 1)) } ?? buffer.count
            let count = try buffer.withUnsafeMutableBytes { try read($0.baseAddress!, wanted) }
            if count == 0 { break }
            total += Int64(count)
            if let length, total > length { throw BodyLengthMismatch(statedLength: length, actualLength: total) }
            try take(Data(buffer[0..<count]))
        }
        if let length, total < length { throw BodyLengthMismatch(statedLength: length, actualLength: total) }
    }
}

/// One stubbed exchange: reports its answer's events to the receiver unless cancelled first,
/// and completes exactly once. A ``RecordingTransport`` replays through it too.
final class Exchange: TransportTask {
    private struct State {
        var isCancelled = false
        var isCompleted = false
        var wait: (any Cancellable)?
        /// The rest of the body, while the receiver has paused it.
        var paused: (@Sendable () -> Void)?
        /// A resume that came before the pause it ends was seen here.
        var resumeOwed = false
    }

    /// The largest piece of a whole body answered to a stream handed over at once, so that a
    /// reader's pause holds the rest back, as a network's would, instead of one piece past its
    /// buffer's ceiling. Pieces a stub names are handed over as named.
    static let largestStreamPiece = 64 << 10

    private let receiver: any TransportReceiver
    /// The transport's queue, where every event is reported.
    private let queue: DispatchQueue
    private let state = Locked(State())

    init(receiver: any TransportReceiver, queue: DispatchQueue) {
        self.receiver = receiver
        self.queue = queue
    }

    /// Marks the queue where a transport's exchanges report their events.
    private static let onQueue = DispatchSpecificKey<Bool>()

    /// A queue for a transport's exchanges.
    static func makeQueue() -> DispatchQueue {
        let queue = DispatchQueue(label: "tern.stub-transport")
        queue.setSpecific(key: onQueue, value: true)
        return queue
    }

    /// Runs `send` on the queue once `delay` has passed on `clock`, and returns only once it has
    /// run: a `TestClock`'s `advance` then returns with the piece or the answer handed over (and
    /// its `advanceToNextDelivery()` knows this wait from the request's other timers).
    func schedule(after delay: TimeInterval, on clock: any APIClock, _ send: @escaping @Sendable () -> Void) -> any Cancellable {
        let action: @Sendable () -> Void = { [queue] in
            if DispatchQueue.getSpecific(key: Self.onQueue) == true { send() } else { queue.sync(execute: send) }
        }
        if let clock = clock as? TestClock { return clock.scheduleDelivery(after: delay, action) }
        return clock.schedule(after: delay, action)
    }

    func wait(_ wait: any Cancellable) {
        let cancelled = state.withLock { state in
            state.wait = wait
            return state.isCancelled
        }
        if cancelled {
            wait.cancel()
            queue.async { self.complete(with: URLError(.cancelled)) }
        }
    }

    /// Stops the exchange: the receiver hears `URLError.cancelled`, unless it has completed.
    func cancel() {
        let (wait, paused) = state.withLock { state -> ((any Cancellable)?, (@Sendable () -> Void)?) in
            state.isCancelled = true
            defer { state.paused = nil }
            return (state.wait, state.paused)
        }
        wait?.cancel()
        // A waiting or paused answer will not run: complete on the queue, after any event under way.
        if wait != nil || paused != nil { queue.async { self.complete(with: URLError(.cancelled)) } }
    }

    /// Hands over the rest of a paused body, on the queue.
    func resumeReceiving() {
        let rest = state.withLock { state -> (@Sendable () -> Void)? in
            guard let rest = state.paused else {
                state.resumeOwed = true
                return nil
            }
            state.paused = nil
            return rest
        }
        if let rest { queue.async(execute: rest) }
    }

    /// Holds `rest` until the receiver resumes, or runs it now if it already has.
    private func pause(until rest: @escaping @Sendable () -> Void) {
        let resumed = state.withLock { state in
            if state.resumeOwed {
                state.resumeOwed = false
                return true
            }
            state.paused = rest
            return false
        }
        if resumed { queue.async(execute: rest) }
    }

    private var isCancelled: Bool { state.withLock { $0.isCancelled } }

    func run(_ answer: Result<StubAnswer, UnmatchedRequest>, for request: TransportRequest, bodyLength: Int, clock: any APIClock) {
        guard !isCancelled else { return complete(with: URLError(.cancelled)) }
        // The request body "goes out" in the answer's chunks too, so upload progress can be tested.
        let step = (try? answer.get())?.chunkSize ?? max(bodyLength, 1)
        for sent in stride(from: step, to: bodyLength + step, by: step) where bodyLength > 0 {
            receiver.didSendBodyData(Int64(min(sent, bodyLength)), of: Int64(bodyLength))
        }
        switch answer {
        case .failure(let unmatched):
            complete(with: unmatched)
        case .success(let answer):
            switch answer.outcome {
            case .failure(let error):
                complete(with: error)
            case .response(let status, var headers, var body):
                // A HEAD's answer, a 204 or a 304 has no body, as over the wire, whatever the stub
                // gives; a HEAD's length is that of the body a GET gets, unless the stub states one.
                let bodyless = ResponseHead.hasNoBody(statusCode: status, method: request.urlRequest.httpMethod)
                if !bodyless || headers["Content-Length"] == nil { headers["Content-Length"] = String(body.count) }
                if bodyless { body = Data() }
                guard let url = request.urlRequest.url,
                      let head = ResponseHead(url: url, statusCode: status, httpVersion: "HTTP/1.1", headers: headers) else {
                    return complete(with: URLError(.badServerResponse))
                }
                let size = answer.chunkSize ?? (request.isStream ? Self.largestStreamPiece : max(body.count, 1))
                let pieces = stride(from: 0, to: body.count, by: size).map { start in
                    (after: TimeInterval(0), data: body.subdata(in: start..<min(start + size, body.count)))
                }
                send(head, then: pieces[...], clock: clock, staysOpen: false, endsWith: nil)
            case .streamed(let status, let headers, let pieces):
                guard let url = request.urlRequest.url,
                      let head = ResponseHead(url: url, statusCode: status, httpVersion: "HTTP/1.1", headers: headers) else {
                    return complete(with: URLError(.badServerResponse))
                }
                let bodyless = ResponseHead.hasNoBody(statusCode: status, method: request.urlRequest.httpMethod)
                // A stream's piece no larger than a socket's read, as for a whole body: a burst
                // kept as one piece would pass the stream buffer's ceiling while its reader is busy.
                let sized = request.isStream ? pieces.flatMap { piece in
                    stride(from: 0, to: max(piece.data.count, 1), by: Self.largestStreamPiece).map { start in
                        (after: start == 0 ? piece.after : 0,
                         data: piece.data.subdata(in: start..<min(start + Self.largestStreamPiece, piece.data.count)))
                    }
                } : pieces
                send(head, then: bodyless ? [] : sized[...], clock: clock, staysOpen: answer.staysOpen, endsWith: answer.endsWith)
            }
        }
    }

    /// Sends the head, then the body once the receiver goes on: one that judges the head on
    /// another queue pauses until it has, and a body sent meanwhile would all pile up behind it.
    private func send(_ head: ResponseHead, then pieces: ArraySlice<(after: TimeInterval, data: Data)>, clock: any APIClock,
                      staysOpen: Bool, endsWith: URLError?) {
        switch receiver.didReceive(head) {
        case .stop: complete(with: URLError(.cancelled))
        case .pause: pause { [self] in stream(pieces, clock: clock, staysOpen: staysOpen, endsWith: endsWith) }
        case .proceed: stream(pieces, clock: clock, staysOpen: staysOpen, endsWith: endsWith)
        }
    }

    /// Sends each piece once its time has passed on `clock`, then completes (failing with
    /// `endsWith`, if given), or stays open until cancelled if `staysOpen`: those due now at
    /// once, in a loop, and the rest once the clock has reached the next; the rest waits while
    /// the receiver has paused.
    private func stream(_ pieces: ArraySlice<(after: TimeInterval, data: Data)>, clock: any APIClock, staysOpen: Bool, endsWith: URLError?) {
        var pieces = pieces
        while let piece = pieces.first, piece.after <= 0 {
            guard !isCancelled else { return complete(with: URLError(.cancelled)) }
            let decision = receiver.didReceive(piece.data)
            guard decision != .stop else { return complete(with: URLError(.cancelled)) }
            pieces = pieces.dropFirst()
            if decision == .pause {
                return pause { [self, pieces] in stream(pieces, clock: clock, staysOpen: staysOpen, endsWith: endsWith) }
            }
        }
        guard let next = pieces.first else { return staysOpen ? wait(Held()) : complete(with: endsWith) }
        pieces[pieces.startIndex].after = 0   // due when the wait is over
        wait(schedule(after: next.after, on: clock) { [self, pieces] in stream(pieces, clock: clock, staysOpen: staysOpen, endsWith: endsWith) })
    }

    /// Reports the end, once.
    func complete(with error: (any Error)?) {
        let first = state.withLock { state in
            defer { state.isCompleted = true }
            return !state.isCompleted
        }
        if first { receiver.didComplete(with: error) }
    }
}

/// A wait with no end: an open stream's, which only cancelling ends.
private struct Held: Cancellable {
    func cancel() {}
}
