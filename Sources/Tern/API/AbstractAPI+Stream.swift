import Foundation

extension AbstractAPI {
    /// Sends a request and reads its body as it arrives: byte chunks, or through ``ResponseStream/lines``,
    /// ``ResponseStream/events`` (Server-Sent Events) or ``ResponseStream/values(of:maximumLineLength:)`` (NDJSON).
    ///
    /// Everything a request goes through happens before the first byte: the delegate signs it,
    /// a 401 refreshes the credentials, redirects are followed, plugins hear of it, and a status
    /// validation refuses fails the stream with ``APIError/unacceptableStatus(_:)`` and the body.
    /// The request's timeout runs until the response's head; once plugins have heard of it, the
    /// options' `RequestOptions(streamIdleTimeout:)` ends the stream when for that long no byte
    /// comes and the reader takes none, and `RequestOptions(streamMaximumDuration:)` once it has
    /// run that long, whatever comes (by default it may run for ever). A reader slower than the
    /// server holds it back: past `RequestOptions(streamBufferSize:)` bytes waiting, the transfer
    /// pauses until the reader has taken half of them (URLSession on Linux cannot pause, and
    /// keeps reading); chunks are let go as the reader takes them. The request asks for
    /// `Accept: */*`, not the parser's type, unless its headers say otherwise.
    /// Leaving the loop, or cancelling its task, stops the transfer. The head's
    /// ``Response/metrics`` hold the earlier exchanges and what is known of its own so far;
    /// plugins hear its end, with the whole transfer's (``PluginEvent/didEndStream(_:error:)``).
    ///
    /// ```swift
    /// for try await line in client.stream(route: .get("/logs/tail")).lines {
    ///     print(line)
    /// }
    /// ```
    public func stream(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        options: RequestOptions = RequestOptions()
    ) -> ResponseStream {
        stream(route: route, parameters: parameters, options: options, usesNewConnection: false)
    }

    /// A stream, on a new connection for each attempt if `usesNewConnection` (an event source's).
    func stream(route: Route, parameters: (any RequestParameters)?, options: RequestOptions, usesNewConnection: Bool) -> ResponseStream {
        let buffer = StreamBuffer(capacity: options.streamBufferSize, idleTimeout: options.streamIdleTimeout,
                                  maximumDuration: options.streamMaximumDuration, clock: clock,
                                  method: route.method.rawValue, url: URL(string: route.url), usesNewConnection: usesNewConnection)
        let head: Promise<Response> = perform(route: route, parameters: parameters, options: options, sink: .stream(buffer), decoding: .response)
        return ResponseStream(response: head, buffer: buffer, parser: options.parser ?? responseParser)
    }
}
