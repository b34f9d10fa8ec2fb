#if os(Linux)
/// The request's method and header fields as libcurl is told them, decided from the request
/// alone: Tern's own fields added, libcurl's defaults that URLSession does not send taken away.
enum CurlRequestHead {
    /// How the method reaches libcurl, beside `CURLOPT_POST` for a request with a body.
    enum Method: Equatable {
        /// libcurl's own for the request: GET without a body, POST with one.
        case implied
        /// A HEAD: `CURLOPT_NOBODY`.
        case noBody
        /// Any other: `CURLOPT_CUSTOMREQUEST`.
        case custom(String)
    }

    /// How `method` reaches libcurl, for a request that sends a body or not.
    static func method(_ method: String, sendsBody: Bool) -> Method {
        if method == "HEAD" { return .noBody }
        return method == (sendsBody ? "POST" : "GET") ? .implied : .custom(method)
    }

    /// Calls `line` with each header field to send, as libcurl's list takes it: its name, the
    /// separator, its value. "Name;" sends a field with an empty (or blank) value; "Name:"
    /// removes libcurl's own. Returns the request's own `Accept-Encoding`, if it named one: codings Tern
    /// cannot undo come as they are only when asked for there; without one, Tern asks for what
    /// it decodes (``ContentDecoder/accepted``), or for `identity` with a range.
    static func forEachField(of fields: [String: String], sendsBody: Bool,
                             _ line: (_ name: String, _ separator: StaticString, _ value: String) -> Void) -> String? {
        var requestedEncodings: String?
        var namesAContentType = false
        for (name, value) in fields {
            if name.caseInsensitiveEquals("Accept-Encoding") {
                requestedEncodings = value
            } else if sendsBody {
                // Nor the request's own `Expect`, in any case: the body goes at once, as over
                // URLSession.
                if name.caseInsensitiveEquals("Expect") { continue }
                if name.caseInsensitiveEquals("Content-Type") { namesAContentType = true }
            }
            // A blank value is an empty one: libcurl would drop "Name:  " without a word.
            if value.isBlankFieldValue {
                line(name, isOwnHeader(name) ? ":" : ";", "")
            } else {
                line(name, ": ", value)
            }
        }
        if requestedEncodings == nil {
            line("Accept-Encoding", ": ", fields.asksForARange ? "identity" : ContentDecoder.accepted)
        }
        if sendsBody {
            // libcurl's defaults for a POST, which URLSession does not add: a form content type,
            // and a wait for "100 Continue" before large bodies.
            if !namesAContentType { line("Content-Type", ":", "") }
            line("Expect", ":", "")
        }
        return requestedEncodings
    }

    /// Whether libcurl adds this header itself unless told not to.
    static func isOwnHeader(_ name: String) -> Bool {
        name.caseInsensitiveEquals("Content-Type") || name.caseInsensitiveEquals("Expect") || name.caseInsensitiveEquals("Accept")
            || name.caseInsensitiveEquals("User-Agent")
    }
}
#endif
