import Tern
import Foundation

/// One element of the 1 KB array every pipeline benchmark decodes.
public struct Item: Codable, Sendable {
    public let id: Int
    public let name: String
    public let price: Double
    public let tags: [String]
}

/// The payload and address every pipeline benchmark uses.
public enum Fixtures {
    /// A JSON array of 16 items, about 1 KB, as the measurements in LINUX_NOTES used.
    public static let body = body(items: 16)

    /// A JSON array of `count` items like those of ``body``.
    public static func body(items count: Int) -> Data {
        let items = (1...count).map { Item(id: $0, name: "item-\($0)", price: Double($0) * 1.5, tags: ["a", "b"]) }
        return try! JSONEncoder().encode(items)
    }

    /// A wide body: a page of 10 GitHub-style repositories (about 80 members each, a nested
    /// owner, optionals, URLs), as `JSONAB` decodes them.
    public static let repositories = Payloads.repositories(count: 10)

    /// Where the items are, for the baselines that build their requests by hand.
    public static let url = URL(string: "http://127.0.0.1/items")!
}

/// A transport that answers at once from memory: what is left to measure is the pipeline.
public struct InstantTransport: WholeResponseTransport {
    private let head = ResponseHead(url: Fixtures.url, statusCode: 200, httpVersion: "HTTP/1.1",
                                    headers: ["Content-Type": "application/json"])!

    public init() {}

    public func send(_ request: TransportRequest, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
        completion(.success(TransportResponse(head: head, body: Fixtures.body)))
        return NoTask()
    }
}

/// ``InstantTransport`` that also reports what libcurl would measure of each exchange, as
/// `CurlTransport` does: to weigh per-request metrics nobody reads against none.
public struct MeasuringInstantTransport: Transport {
    private let head = ResponseHead(url: Fixtures.url, statusCode: 200, httpVersion: "HTTP/1.1",
                                    headers: ["Content-Type": "application/json"])!

    public init() {}

    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        if receiver.didReceive(head) != .stop { _ = receiver.didReceive(Fixtures.body) }
        receiver.didCollect(TransferMetrics(
            url: Fixtures.url, statusCode: 200, nameLookup: 0.000_01, connect: 0.000_02, firstByte: 0.000_05,
            total: 0.000_06, bytesSent: 0, bytesReceived: Int64(Fixtures.body.count), reusedConnection: true,
            httpVersion: "HTTP/1.1"
        ))
        receiver.didComplete(with: nil)
        return NoTask()
    }
}

/// The API under measurement.
public final class ItemsAPI: AbstractAPI, @unchecked Sendable {
    public init(baseURL: String, transport: (any Transport)? = nil, responseQueue: DispatchQueue) {
        super.init(configuration: APIConfiguration(baseURL: baseURL), transport: transport, responseQueue: responseQueue)
    }

    /// `GET /items`, decoded.
    public func items() -> Promise<[Item]> { request(route: .get("/items")) }

    /// `GET /items`, its body as bytes.
    public func bytes() -> Promise<Data> { request(route: .get("/items")) }
}
