import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: a `URLSession`.
///
/// By default each API gets a session of its own, made from `URLSessionConfiguration.default`,
/// whose completion handlers run concurrently, one per core, so that parsing does not queue
/// behind one thread. When the transport is released (after the last request that uses it has
/// finished) that session is invalidated. A session passed in stays the caller's: it is used as
/// it is and never invalidated.
public final class URLSessionTransport: Transport {
    /// The session requests go through.
    public let session: URLSession
    private let ownsSession: Bool

    /// Creates a transport over a new session made from `configuration`.
    public init(configuration: URLSessionConfiguration = .default) {
        let delegateQueue = OperationQueue()
        delegateQueue.name = "tern.transport"
        delegateQueue.maxConcurrentOperationCount = ProcessInfo.processInfo.activeProcessorCount
        session = URLSession(configuration: configuration, delegate: nil, delegateQueue: delegateQueue)
        ownsSession = true
    }

    /// Creates a transport over a session of the caller's, which is never invalidated here.
    public init(session: URLSession) {
        self.session = session
        ownsSession = false
    }

    deinit {
        guard ownsSession else { return }
        // Lets tasks still running finish; every request holds the transport, so none are left.
        // The last request often releases the transport inside its completion handler, on this
        // session's own delegate queue: invalidating (and freeing) the session from there races
        // with FoundationNetworking's teardown on Linux. So it is done from another queue.
        let session = session
        DispatchQueue.global().async { session.finishTasksAndInvalidate() }
    }

    public func send(
        _ request: TransportRequest,
        completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void
    ) -> any TransportTask {
        let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            if let error {
                completion(.failure(error))
            } else if let response = response as? HTTPURLResponse {
                completion(.success(TransportResponse(httpResponse: response, body: data ?? Data())))
            } else {
                completion(.failure(URLError(.badServerResponse)))
            }
        }
        let task = if let file = request.bodyFile {
            session.uploadTask(with: request.urlRequest, fromFile: file, completionHandler: handler)
        } else {
            session.dataTask(with: request.urlRequest, completionHandler: handler)
        }
        task.resume()
        return task
    }
}
