import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An answer the cache gives without the server: the kept response's events, sent at once on
/// the sender's thread (as a whole-response transport may). Handed to another thread, a hit
/// was answered hardly faster than a request over loopback; on the sender's, several times
/// faster (see the Benchmarks article).
enum CachedAnswer {
    /// Sends `response`'s events to `receiver` (no body for a `HEAD`) as the answer to a request
    /// to `url`, its metrics saying `outcome`; there is nothing left to cancel once this returns.
    static func send(_ response: CachedResponse, for url: URL?, outcome: CacheOutcome, age: TimeInterval?, bodyless: Bool,
                     to receiver: any TransportReceiver) -> any TransportTask {
        let metrics = TransferMetrics(url: url ?? URL(string: response.url), statusCode: response.status, total: 0, cacheOutcome: outcome)
        deliver(response, for: url, age: age, bodyless: bodyless, metrics: metrics, to: receiver)
        return NoTask()
    }

    /// Hands `receiver` the head, the body, the metrics and the end of `response`: its kept
    /// fields and a `304`'s `cookies`, its `Age` (RFC 9111, §5.1) and the length of the body as
    /// kept (decoded). Its URL is the request's, `url`, as the server's answer has: the key it
    /// is kept under has no user, password or fragment, and a link in it would be resolved
    /// without them.
    static func deliver(_ response: CachedResponse, for url: URL?, age: TimeInterval?, bodyless: Bool, metrics: TransferMetrics,
                        cookies: CacheExchange.Cookies? = nil, to receiver: any TransportReceiver) {
        var fields = response.headers
        if let cookies { fields["set-cookie"] = cookies.joined }
        fields["content-length"] = String(response.body.count)
        if let age, age.isFinite { fields["age"] = String(Int(min(max(age, 0), TimeInterval(Int32.max)))) }
        guard let url = url ?? URL(string: response.url),
              let head = ResponseHead(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headers: HTTPHeaders(fields),
                                      setCookies: cookies?.fields) else {
            return receiver.didComplete(with: URLError(.badServerResponse))
        }
        if receiver.didReceive(head) != .stop, !bodyless, !response.body.isEmpty {
            _ = receiver.didReceive(response.body)
        }
        receiver.didCollect(metrics)
        receiver.didComplete(with: nil)
    }

    /// What a request that wants only what is kept gets when nothing kept will do (RFC 9111,
    /// §5.2.1.7): a `504`.
    static func gatewayTimeout(for request: URLRequest, at date: Date) -> CachedResponse {
        CachedResponse(url: request.url.map(CacheKey.of) ?? "", status: 504, headers: ["content-type": "text/plain"],
                       body: Data("Nothing kept answers this request, and it asked for nothing else (only-if-cached).".utf8),
                       requestDate: date, responseDate: date, varying: [:])
    }
}
