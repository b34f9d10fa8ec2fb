import Tern
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The pipeline-overhead workloads: `count` GETs of the 1 KB array over ``InstantTransport``,
/// all in flight at once, each decoded off the caller's thread and delivered on `delivery`.
/// The benchmark and the `OverheadAB` harness run exactly these.
public enum Overhead {
    /// Through Tern's whole pipeline.
    public static func tern(_ count: Int, api: ItemsAPI, _ consume: @escaping @Sendable (Result<[Item], any Error>) -> Void) {
        let done = DispatchGroup()
        for _ in 0..<count {
            done.enter()
            api.items().onResult { consume($0); done.leave() }
        }
        done.wait()
    }

    /// The same work by hand, with the same transport and the same queue hops: build the
    /// `URLRequest`, send it, decode on the pipeline queue, deliver on `delivery`.
    public static func byHand(
        _ count: Int,
        pipeline: DispatchQueue,
        delivery: DispatchQueue,
        _ consume: @escaping @Sendable (Result<[Item], any Error>) -> Void
    ) {
        let transport = InstantTransport()
        let done = DispatchGroup()
        for _ in 0..<count {
            done.enter()
            pipeline.async {
                var request = URLRequest(url: Fixtures.url)
                request.httpMethod = "GET"
                request.setValue("application/json", forHTTPHeaderField: "Accept")
                _ = transport.send(TransportRequest(urlRequest: request)) { result in
                    let items = Result { try JSONDecoder().decode([Item].self, from: try result.get().body) }
                    delivery.async { consume(items); done.leave() }
                }
            }
        }
        done.wait()
    }

    /// A GET of `url` through `transport` alone, its end settling a promise delivered on
    /// `delivery`, its request made from the URL string as Tern makes one: the least a
    /// promise-returning client over that transport costs.
    public static func promised(_ url: String, over transport: any Transport, delivery: DispatchQueue) -> Promise<Data> {
        let (promise, resolver) = Promise<Data>.pending(in: delivery)
        var request = URLRequest(url: URL(string: url)!)
        request.httpShouldHandleCookies = false
        request.allHTTPHeaderFields = ["Accept": "application/json"]
        _ = transport.send(TransportRequest(urlRequest: request), to: BodyCollector { resolver.resolve($0) })
        return promise
    }
}

/// Collects one exchange's body and hands it over at its end.
public final class BodyCollector: TransportReceiver, @unchecked Sendable {   // unchecked: one exchange's, called in turn
    private var body = Data()
    private let done: @Sendable (Result<Data, any Error>) -> Void
    public init(_ done: @escaping @Sendable (Result<Data, any Error>) -> Void) { self.done = done }
    public func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
    public func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
    public func didReceive(_ chunk: Data) -> TransferDecision { body.append(chunk); return .proceed }
    public func didComplete(with error: (any Error)?) { done(error.map { .failure($0) } ?? .success(body)) }
}
