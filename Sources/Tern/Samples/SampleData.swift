import Foundation

/// The answer an endpoint gives when its API answers with sample data (Opera's `sampleData`):
/// for previews, demos, and working before the server exists.
///
/// Declare it with the endpoint, in its options or on a request value:
///
/// ```swift
/// func featured() -> Promise<[Product]> {
///     client.request(route: .get("/featured"),
///                    options: RequestOptions(sampleData: .json(#"[{"id": 1, "name": "Arctic tern", "price": 12}]"#)))
/// }
/// static let catalog = APIRequest<[Product]>(.get("/products")).sample(.json("[]"))
/// ```
///
/// It is used only by an API whose configuration sets `APIConfiguration(usesSampleData: true)`; the
/// sample then stands in for the server, and everything else runs as usual: the delegate,
/// plugins, validation, the parser.
public struct SampleData: Sendable {
    /// The status code.
    package var status: Int
    /// The response headers.
    package var headers: HTTPHeaders
    /// Where the body comes from.
    var body: Body

    enum Body: Sendable {
        case data(Data)
        /// Read when a request asks for it, so a large fixture costs nothing until used.
        case file(URL)
    }

    /// A response with `body`.
    public init(status: Int = 200, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.init(status: status, headers: headers, body: .data(body))
    }

    init(status: Int, headers: HTTPHeaders, body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body, given as text.
    public static func json(_ text: String, status: Int = 200) -> SampleData {
        SampleData(status: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
    }

    /// The contents of a file, such as a fixture in the app's bundle, read when it is used.
    public static func file(_ url: URL, contentType: String = "application/json", status: Int = 200) -> SampleData {
        SampleData(status: status, headers: ["Content-Type": contentType], body: .file(url))
    }
}

extension APIRequest {
    /// This request with `sample` as its sample data.
    public func sample(_ sample: SampleData) -> APIRequest {
        var request = self
        request.options.sampleData = sample
        return request
    }
}
