/// A request's parameters with the `Last-Event-ID` header an event source reconnects with.
struct LastEventIDParameters: RequestParameters {
    let parameters: (any RequestParameters)?
    let lastEventID: String

    var headers: HTTPHeaders {
        var headers = parameters?.headers ?? [:]
        if !lastEventID.isEmpty { headers["Last-Event-ID"] = lastEventID }
        return headers
    }

    func encode(into draft: inout RequestDraft) throws {
        try parameters?.encode(into: &draft)
    }
}
