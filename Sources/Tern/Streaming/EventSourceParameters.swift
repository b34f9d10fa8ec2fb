/// A request's parameters with the headers each connection of an event source carries: the
/// `Last-Event-ID` it reconnects with (at first the parameters' own, if they set one), and, as the WHATWG `EventSource` sends them,
/// `Accept: text/event-stream` and `Cache-Control: no-cache`, unless the parameters or the
/// options set those themselves. Not the parser's `Accept`: a server that chooses by it
/// answered JSON or 406, and the source ended.
struct EventSourceParameters: RequestParameters {
    let parameters: (any RequestParameters)?
    let lastEventID: String
    /// Whether the request's options set `Cache-Control` (their cache directives).
    let setsCacheControl: Bool

    var headers: HTTPHeaders {
        var headers = parameters?.headers ?? [:]
        if headers["Accept"] == nil { headers["Accept"] = "text/event-stream" }
        if headers["Cache-Control"] == nil, !setsCacheControl { headers["Cache-Control"] = "no-cache" }
        // The parameters' own is the first connection's, and the source's from then on: an
        // `id:` with nothing after it says to send none.
        headers["Last-Event-ID"] = lastEventID.isEmpty ? nil : lastEventID
        return headers
    }

    func encode(into draft: inout RequestDraft) throws {
        try parameters?.encode(into: &draft)
    }
}
