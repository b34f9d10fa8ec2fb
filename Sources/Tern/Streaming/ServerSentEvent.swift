/// One event of a Server-Sent Events stream (`text/event-stream`), as the WHATWG HTML
/// specification dispatches it.
struct ServerSentEvent: Sendable, Equatable {
    /// The event's type: its `event` field, or "message" when it had none.
    var type: String
    /// Its `data` fields, joined by line feeds.
    var data: String
    /// The last event ID when it was dispatched: its own `id` field, or the latest before it.
    var lastEventID: String
}
