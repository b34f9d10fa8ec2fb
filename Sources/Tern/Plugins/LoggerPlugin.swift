import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Prints what an API sends and receives, at a chosen level, with secrets redacted.
///
/// ```swift
/// let logger = LoggerPlugin(level: .verbose, redactingHeaders: ["X-Api-Key"], redactingQueryKeys: ["token"], includesCURL: true)
/// let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", plugins: [logger]))
/// ```
///
/// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` are always redacted, as are
/// the headers the API's `RedirectPolicy` keeps at their origin (its `sensitiveHeaders`, and a
/// request's own policy's: a secret is named once) and the user-info of a URL (`alice:secret@`). Query keys are matched after percent-decoding,
/// without case, and by any part of a bracketed key: `token` redacts `Token=`, `token%5B%5D=`
/// (`token[]`, as ``URLParameters`` writes arrays) and `auth[token]=`. The
/// output goes to `sink`, `print` by default; one line sends it to `os.Logger` or swift-log
/// instead, with no dependency here:
///
/// ```swift
/// LoggerPlugin(level: .response) { line in logger.info("\(line)") }
/// ```
public struct LoggerPlugin: Plugin {
    /// How much to print.
    package let level: LogLevel
    /// Header names whose values are replaced by `<redacted>`, lowercased.
    package private(set) var redactedHeaders: Set<String>
    /// Query keys whose values are replaced by `<redacted>`, lowercased.
    package let redactedQueryKeys: Set<String>
    /// Whether `.verbose` also prints each request as a cURL command.
    package let includesCURL: Bool
    /// How many bytes of a body `.verbose` prints (a body with control characters in them is
    /// named by its size instead).
    package let bodyLimit: Int
    private let sink: @Sendable (String) -> Void

    /// Headers always redacted.
    package static let alwaysRedacted: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Creates a logger.
    public init(
        level: LogLevel = .response,
        redactingHeaders: Set<String> = [],
        redactingQueryKeys: Set<String> = [],
        includesCURL: Bool = false,
        bodyLimit: Int = 1024,
        sink: @escaping @Sendable (String) -> Void = { print($0) }
    ) {
        self.level = level
        redactedHeaders = Self.alwaysRedacted.union(redactingHeaders.map { $0.lowercased() })
        redactedQueryKeys = Set(redactingQueryKeys.map { $0.lowercased() })
        self.includesCURL = includesCURL
        self.bodyLimit = bodyLimit
        self.sink = sink
    }

    /// Prints what the event says, as much as its level asks for.
    public func observe(_ event: PluginEvent, api: APIContext) {
        let sensitive = api.sensitiveHeaders
        guard sensitive.isEmpty else {
            var logger = self
            logger.redactedHeaders.formUnion(sensitive.lazy.map { $0.lowercased() })
            return logger.log(event)
        }
        log(event)
    }

    private func log(_ event: PluginEvent) {
        switch event {
        case .willSend(let request): willSend(request)
        case .didReceive(let result, let request): didReceive(result, for: request)
        case .didEndStream(let response, let error): didEndStream(response, error: error)
        case .didRetry(let request, let retry, let delay): didRetry(request, retry: retry, after: delay)
        case .didRefresh(let result): didRefresh(result)
        case .didFail: break   // its attempt's line said it
        }
    }

    private func willSend(_ request: URLRequest) {
        guard level >= .request else { return }
        var lines = ["→ \(request.httpMethod ?? "GET") \(redacted(request.url))"]
        if level >= .verbose {
            lines += headerLines(request.allHTTPHeaderFields ?? [:])
            if let body = request.httpBody, !body.isEmpty { lines.append(bodyText(body)) }
            if includesCURL { lines.append(curl(request)) }
        }
        sink(lines.joined(separator: "\n"))
    }

    private func didReceive(_ result: Result<Response, APIError>, for request: URLRequest) {
        guard level >= .response else { return }
        let subject = "\(request.httpMethod ?? "GET") \(redacted(request.url))"
        switch result {
        case .success(let response):
            let size = response.fileLength.map { "\(Self.size(Int(clamping: $0))) in its file" } ?? Self.size(response.body.count)
            var lines = ["← \(response.statusCode) \(subject) in \(Self.milliseconds(response.duration)), \(size)"
                + (response.metrics.last.map { "; " + Self.wire($0) } ?? "")]
            if level >= .verbose {
                lines += headerLines(response.headers.dictionary)
                if !response.body.isEmpty { lines.append(bodyText(response.body)) }
            }
            sink(lines.joined(separator: "\n"))
        case .failure(let error):
            // Most errors begin with the request's method and URL: the line is theirs.
            let text = text(of: error, for: request)
            sink(text.hasPrefix(subject + " ") ? "← " + text : "← failed \(subject): \(text)")
        }
    }

    /// One line for a stream's end: how long it ran, what came (where measured), and why it
    /// ended if not whole.
    private func didEndStream(_ response: Response, error: APIError?) {
        guard level >= .response else { return }
        let request = response.request
        var line = "← end of stream \(request.httpMethod ?? "GET") \(redacted(request.url)) after \(Self.milliseconds(response.duration))"
        if let wire = response.metrics.last {
            line += ", \(Self.size(Int(clamping: wire.bytesReceived)))"
            let words = Self.wire(wire)
            if !words.isEmpty { line += "; " + words }
        }
        if let error { line += ": " + text(of: error, for: request) }
        sink(line)
    }

    /// The error's description: it names the URL too, as errors do (password hidden); the query
    /// is redacted here.
    private func text(of error: APIError, for request: URLRequest) -> String {
        request.url.map { "\(error)".replacingOccurrences(of: describe($0), with: redacted($0)) } ?? "\(error)"
    }

    private func didRetry(_ request: URLRequest, retry: Int, after delay: TimeInterval) {
        guard level >= .request else { return }
        sink("↻ retry \(retry) of \(request.httpMethod ?? "GET") \(redacted(request.url)) in \(Self.milliseconds(delay))")
    }

    private func didRefresh(_ result: Result<Void, any Error>) {
        guard level >= .request else { return }
        switch result {
        case .success: sink("⟳ credentials refreshed")
        case .failure(let error): sink("⟳ credential refresh failed: \(error)")
        }
    }

    // MARK: Formatting

    /// The URL as text, with its user-info and the values of redacted query keys replaced. It
    /// works on the text: the result is for reading, and Foundation traps on a URL query
    /// holding `<` or `>`.
    func redacted(_ url: URL?) -> String {
        guard let url else { return "(no URL)" }
        let text = Self.withoutUserInfo(url.absoluteString)
        guard !redactedQueryKeys.isEmpty, let mark = text.firstIndex(of: "?") else { return text }
        let end = text[mark...].firstIndex(of: "#") ?? text.endIndex
        let pairs = text[text.index(after: mark)..<end].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let name = pair.prefix { $0 != "=" }
            return isRedacted(queryKey: name) ? "\(name)=<redacted>" : String(pair)
        }
        return text[..<mark] + "?" + pairs.joined(separator: "&") + text[end...]
    }

    /// Whether a query key, as written, names a redacted key: decoded (`%5B` is `[`, `+` a
    /// space), without case, and by any of its bracketed parts (`auth[token][]`).
    private func isRedacted(queryKey: Substring) -> Bool {
        let decoded = (String(queryKey).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(queryKey)).lowercased()
        if redactedQueryKeys.contains(decoded) { return true }
        return decoded.split(whereSeparator: { $0 == "[" || $0 == "]" }).contains { redactedQueryKeys.contains(String($0)) }
    }

    /// `scheme://user:password@host…` as `scheme://<redacted>@host…`.
    static func withoutUserInfo(_ text: String) -> String {
        guard let separator = text.range(of: "://") else { return text }
        let authority = text[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return text }
        return text[..<separator.upperBound] + "<redacted>" + text[at...]
    }

    private func redactedValue(of name: String, _ value: String) -> String {
        redactedHeaders.contains(name.lowercased()) ? "<redacted>" : value
    }

    private func headerLines(_ headers: [String: String]) -> [String] {
        headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { "  \($0.key): \(redactedValue(of: $0.key, $0.value))" }
    }

    private func bodyText(_ body: Data) -> String {
        "  " + printable(body) + (body.count > bodyLimit && !Self.isBinary(body.prefix(bodyLimit)) ? " … (\(Self.size(body.count)))" : "")
    }

    /// The body's first `bodyLimit` bytes as text, or what it is when they are not text: bytes
    /// a terminal would take for controls (a NUL, an escape) never reach the log.
    private func printable(_ body: Data) -> String {
        let shown = body.prefix(bodyLimit)
        return Self.isBinary(shown) ? "<\(Self.size(body.count)) of binary data>" : String(decoding: shown, as: UTF8.self)
    }

    /// Whether `bytes` hold a control character other than a tab or a line break.
    private static func isBinary(_ bytes: Data) -> Bool {
        bytes.contains { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }
    }

    /// The request as a cURL command, secrets redacted.
    func curl(_ request: URLRequest) -> String {
        var parts = ["curl", "-X", request.httpMethod ?? "GET", Self.quoted(redacted(request.url))]
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            parts += ["-H", Self.quoted("\(name): \(redactedValue(of: name, value))")]
        }
        if let body = request.httpBody, !body.isEmpty {
            parts += ["--data-binary", Self.quoted(printable(body))]
        }
        return "  " + parts.joined(separator: " ")
    }

    private static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// One exchange's metrics in a few words, as `curl -w` would print them: the steps that
    /// happened, the protocol, whether the connection was reused.
    static func wire(_ metrics: TransferMetrics) -> String {
        let steps: [(String, TimeInterval?)] = [
            ("dns", metrics.nameLookup), ("connect", metrics.connect), ("tls", metrics.tlsHandshake),
            ("first byte", metrics.firstByte), ("total", metrics.total),
        ]
        var words = steps.compactMap { name, seconds in
            seconds.flatMap { $0 > 0 ? "\(name) \(String(format: "%.1f", $0 * 1000)) ms" : nil }
        }
        if let version = metrics.httpVersion { words.append(version) }
        if let reused = metrics.reusedConnection { words.append(reused ? "reused connection" : "new connection") }
        if let outcome = metrics.cacheOutcome { words.append("cache \(outcome.rawValue)") }
        return words.joined(separator: ", ")
    }

    private static func milliseconds(_ seconds: TimeInterval) -> String {
        "\(Int((seconds * 1000).rounded())) ms"
    }

    private static func size(_ bytes: Int) -> String {
        bytes < 1024 ? "\(bytes) B" : String(format: "%.1f KB", Double(bytes) / 1024)
    }
}
