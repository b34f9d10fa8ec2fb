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
}
