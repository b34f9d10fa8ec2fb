/// One event of a Server-Sent Events stream (`text/event-stream`), as the WHATWG HTML
/// specification dispatches it: see ``ResponseStream/events``.
public struct ServerSentEvent: Sendable, Equatable {
    /// The event's type: its `event` field, or "message" when it had none.
    public var type: String
    /// Its `data` fields, joined by line feeds.
    public var data: String
    /// The last event ID when it was dispatched: its own `id` field, or the latest before it.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}
