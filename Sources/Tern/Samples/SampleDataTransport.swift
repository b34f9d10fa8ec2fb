import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport of a request in an API that answers with sample data: it answers with the
/// request's sample, or fails with ``MissingSampleData`` when the request has none.
struct SampleDataTransport: WholeResponseTransport {
    let sample: SampleData?

    func send(_ request: TransportRequest, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
        completion(Result {
            let url = request.urlRequest.url ?? URL(fileURLWithPath: "/")
            guard let sample else { throw MissingSampleData(method: request.urlRequest.httpMethod, url: url) }
            let body = switch sample.body {
            case .data(let data): data
            case .file(let file): try Data(contentsOf: file)
            }
            guard let response = HTTPURLResponse(url: url, statusCode: sample.status, httpVersion: "HTTP/1.1",
                                                 headerFields: Dictionary(sample.headers.map { ($0.name, $0.value) }) { _, last in last }) else {
                throw URLError(.cannotParseResponse)   // a status Foundation refuses
            }
            return TransportResponse(httpResponse: response, body: body)
        })
        return NoTask()
    }
}

/// Why a request failed in an API that answers with sample data: the request has none. It
/// arrives as the `underlying` error of ``APIError/transportFailed(_:)``.
public struct MissingSampleData: Error, Sendable, CustomStringConvertible {
    /// The request's method.
    package let method: String?
    /// The request's URL.
    package let url: URL

    /// What went wrong, in words.
    public var description: String {
        "\(method ?? "GET") \(url.absoluteString) has no sample data, and its API answers with sample data only "
            + "(APIConfiguration.usesSampleData): give it RequestOptions(sampleData:)"
    }
}
