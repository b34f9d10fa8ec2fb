import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension AbstractAPI {
    /// Server-Sent Events from `route`, reconnecting when the connection ends, as a browser's
    /// `EventSource` does.
    ///
    /// When the server ends the body, or the connection drops or goes idle, the source waits (the
    /// server's `retry`, else `reconnection.delay`, doubled with jitter while attempts fail or
    /// end at once without an event, and never under half a second: see ``EventReconnection``)
    /// and sends the request again through the whole pipeline, so the delegate signs it anew (a
    /// token may have expired meanwhile), with `Last-Event-ID` set to the last event ID,
    /// `Accept: text/event-stream` and `Cache-Control: no-cache` (unless `parameters` set those).
    /// A `Last-Event-ID` in `parameters`' headers resumes from that ID: it is the first
    /// connection's, and the last event ID until the server sends another. Each attempt is one
    /// request: the retry policy does not apply, and the plugins (the API's and `options`') hear
    /// each one, its request before it goes, its head (or its error) when it comes, its end
    /// (``PluginEvent/didEndStream(_:error:)``), and each reconnection before its wait
    /// (``PluginEvent/didRetry(_:retry:delay:)``, counting the reconnections since the last
    /// event). The
    /// options' stream settings (`RequestOptions(streamIdleTimeout:)`, its buffer size and
    /// longest duration) hold for each connection: one that ends by them is made again.
    /// It ends when the server answers 204, and fails with the request's error on a status
    /// validation refuses, on a cancel, on a transport's failure that is not a `URLError` (a
    /// stub or a recording with no answer for the request), or once
    /// `reconnection.maximumFailures` attempts have failed in a row (a refresh of the
    /// credentials that failed on the network counts as one such attempt); an answer whose
    /// `Content-Type` is not `text/event-stream` fails it with ``APIError/parsingFailed(_:)``,
    /// which says so, its underlying error a ``NotAnEventStream`` and its body snippet the
    /// answer's first bytes (the server's error, often).
    ///
    /// ```swift
    /// for try await change in client.events(route: .get("/changes")) {
    ///     print(change.lastEventID, change.data)
    /// }
    /// ```
    public func events(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        options: RequestOptions = RequestOptions(),
        reconnection: EventReconnection = EventReconnection()
    ) -> ResponseSequence<ServerSentEvent> {
        ResponseSequence(EventSource(api: self, route: route, parameters: parameters, options: options, reconnection: reconnection))
    }
}

/// Server-Sent Events that reconnect: what ``AbstractAPI/events(route:parameters:options:reconnection:)`` reads.
struct EventSource: AsyncSequence, Sendable {
    /// An event.
    typealias Element = ServerSentEvent

    let api: AbstractAPI
    let route: Route
    let parameters: (any RequestParameters)?
    let options: RequestOptions
    let reconnection: EventReconnection

    /// Makes an iterator, which opens the first connection when first asked for an event.
    func makeAsyncIterator() -> Iterator {
        Iterator(source: self)
    }

    /// Yields the events of one connection after another.
    struct Iterator: AsyncIteratorProtocol {
        let source: EventSource
        private var events: ServerSentEvents.Iterator?
        private var stream: ResponseStream?
        private var lastEventID: String
        private var serverDelay: TimeInterval?
        /// Attempts that failed in a row, for `maximumFailures`.
        private var failures = 0
        /// Attempts in a row that failed or ended at once without an event: what the wait
        /// doubles with.
        private var fruitless = 0
        /// When the connection under way started, on the API's clock, and whether it has
        /// brought an event.
        private var connectedAt: TimeInterval = 0
        private var hasEvent = false
        /// Whether the connection under way had its head: it connected, whatever ended it.
        private var isOpen = false
        private var isFinished = false
        /// Reconnections since the last event, for plugins.
        private var reconnections = 0
        /// The request of the connection that ended last, as it went out.
        private var lastRequest: URLRequest?

        init(source: EventSource) {
            self.source = source
            // The parameters' `Last-Event-ID`, if any, resumes from there.
            lastEventID = source.parameters?.headers["Last-Event-ID"] ?? ""
        }

        /// The next event; `nil` once the server has answered 204.
        mutating func next() async throws -> ServerSentEvent? {
            while !isFinished {
                do {
                    if events == nil { try await connect() }
                    if let event = try await events?.next() {
                        failures = 0
                        fruitless = 0
                        reconnections = 0
                        hasEvent = true
                        lastEventID = event.lastEventID
                        return event
                    }
                    // The server ended the body: a 204 says stop, anything else, come back later.
                    let status = try await stream?.response.value.statusCode
                    keepState()
                    if status == 204 {
                        isFinished = true
                        return nil
                    }
                    // An answer that ended well is no failure, for `maximumFailures`. Ended at once
                    // without an event, it is backed off as a failure would be; a quiet feed the
                    // server closes now and then is not.
                    failures = 0
                    if hasEvent {
                        fruitless = 0
                    } else if source.api.clock.now - connectedAt < EventReconnection.shortestQuietConnection {
                        fruitless += 1
                    } else {
                        fruitless = 0
                    }
                } catch let error as APIError {
                    keepState()
                    guard Self.isWorthReconnecting(error) else {
                        isFinished = true
                        throw error
                    }
                    if isOpen, hasEvent || source.api.clock.now - connectedAt >= EventReconnection.shortestQuietConnection {
                        // Cut after it brought an event or stayed open a while: a new row of
                        // failures starts with this one, and its wait afresh.
                        (failures, fruitless) = (1, 0)
                    } else {
                        failures += 1
                        fruitless += 1
                    }
                    if let maximum = source.reconnection.maximumFailures, failures >= maximum {
                        isFinished = true
                        throw error
                    }
                }
                let wait = source.reconnection.wait(afterFailures: fruitless, serverDelay: serverDelay)
                reconnections += 1
                await tellPlugins(reconnection: reconnections, after: wait)
                do {
                    // On the API's clock, as every other wait of a request.
                    try await Promise(value: (), in: .global()).delay(wait, clock: source.api.clock).value
                } catch {
                    isFinished = true
                    throw APIError.cancelled
                }
            }
            return nil
        }

        /// Opens a connection, once its head has come. An answer that is no event stream (as a
        /// page or an error in JSON would be) fails the source, which a browser's does not make
        /// again: read as events, it would end with none, and be asked for again for ever.
        private mutating func connect() async throws {
            connectedAt = source.api.clock.now
            (hasEvent, isOpen) = (false, false)
            let parameters = EventSourceParameters(parameters: source.parameters, lastEventID: lastEventID,
                                                   setsCacheControl: source.options.cacheDirectives?.fieldValue != nil)
            // The source's reconnections are its retries: a request retried by the policy, or by
            // libcurl on a kept connection found dead, multiplied the attempts `maximumFailures`
            // allows.
            var options = source.options
            options.retryPolicy = .never
            let stream = source.api.stream(route: source.route, parameters: parameters, options: options, usesNewConnection: true)
            self.stream = stream
            var events = stream.events(limitsNamed: Self.limits, lastEventID: lastEventID).makeAsyncIterator()
            _ = try await stream.eventStreamHead()
            // Checked here, to connect or fail before the first event: not again by the iterator.
            events.isEventStream = true
            self.events = events
            isOpen = true
        }

        /// What a line or an event too long for the source says of its limits, which are fixed.
        static let limits = "an event source reads no line over 1 MiB and no event's data over 16 MiB; "
            + "for others, read stream(route:...).events(maximumLineLength:maximumEventLength:)"

        /// Tells plugins (the API's, then the options') that the source connects again after
        /// `wait` seconds, naming the ended connection's request; on the API's pipeline queue,
        /// as every plugin event, and before the wait starts.
        private func tellPlugins(reconnection: Int, after wait: TimeInterval) async {
            let api = source.api
            let plugins = api.plugins + source.options.plugins
            guard !plugins.isEmpty, let request = lastRequest else { return }
            let event = PluginEvent.didRetry(request, retry: reconnection, delay: wait)
            await withCheckedContinuation { (told: CheckedContinuation<Void, Never>) in
                api.pipelineQueue.async {
                    plugins.forEach { $0.observe(event, api: api.apiContext) }
                    told.resume()
                }
            }
        }

        /// Keeps what the ended connection's events said: the last event ID and the server's
        /// reconnection time.
        private mutating func keepState() {
            lastRequest = stream?.buffer.sentRequest ?? lastRequest
            if let parser = events?.parser {
                lastEventID = parser.lastEventID
                serverDelay = parser.reconnectionTime.map { TimeInterval($0) / 1000 } ?? serverDelay
            }
            events = nil
            stream = nil
        }

        /// Whether a connection that ended with `error` is one to make again: not after a cancel,
        /// nor after an answer the pipeline refused (a status, a redirect, credentials), nor after
        /// a transport's failure that is not the network's (a stub or a recording with no answer
        /// for the request, sample data missing): those would fail again, every time. A refresh
        /// of the credentials that failed on the network is waited out as the network's failure.
        static func isWorthReconnecting(_ error: APIError) -> Bool {
            switch error {
            case .transportFailed(let failure): failure.urlError != nil
            case .timeout: true
            case .authentication(.refreshFailed(let cause as APIError)): isWorthReconnecting(cause)
            case .authentication(.refreshFailed(let cause)): cause is URLError
            default: false
            }
        }
    }
}
