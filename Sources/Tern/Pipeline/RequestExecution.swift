import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request's trip through the pipeline: build, adapt, send, validate, parse, deliver.
///
/// It settles its promise exactly once, whichever comes first: the response, a transport
/// error, the timeout, or cancellation. Whatever ends it also stops the rest: the timer, the
/// network task, the temporary body file.
final class RequestExecution<Value: Sendable>: Sendable {
    private let api: AbstractAPI
    private let route: Route
    private let parameters: (any RequestParameters)?
    private let options: RequestOptions
    private let decoding: ResponseDecoding<Value>
    private let resolver: Promise<Value>.Resolver
    private let state = Locked(State())

    private struct State {
        var task: (any TransportTask)?
        var timer: UInt64?
        var temporaryFile: URL?
        var isFinished = false
    }

    init(
        api: AbstractAPI,
        route: Route,
        parameters: (any RequestParameters)?,
        options: RequestOptions,
        decoding: ResponseDecoding<Value>,
        resolver: Promise<Value>.Resolver
    ) {
        self.api = api
        self.route = route
        self.parameters = parameters
        self.options = options
        self.decoding = decoding
        self.resolver = resolver
    }

    private var parser: any ResponseParser { options.parser ?? api.responseParser }
    private var timeout: TimeInterval { options.timeout ?? api.configuration.timeout }

    /// Runs on the API's pipeline queue.
    func start() {
        resolver.onCancel { [self] in finish(.failure(APIError.cancelled)) }
        do {
            let configuration = api.configuration
            var (request, temporaryFile) = try RequestBuilder.build(
                route: route,
                parameters: parameters,
                timeout: timeout,
                cachePolicy: options.cachePolicy ?? configuration.cachePolicy,
                commonHeaders: configuration.commonHeaders,
                acceptHeader: parser.acceptHeader
            )
            if let temporaryFile {
                // Cancelled while the body was being written: nobody will send it.
                let isFinished = state.withLock { state in
                    if !state.isFinished { state.temporaryFile = temporaryFile }
                    return state.isFinished
                }
                if isFinished {
                    try? FileManager.default.removeItem(at: temporaryFile)
                    return
                }
            }
            try adapt(&request.urlRequest)
            send(request)
        } catch {
            finish(.failure(error))
        }
    }

    /// Stage 2: the delegate signs the request; what it sets is checked like everything else.
    private func adapt(_ request: inout URLRequest) throws {
        guard let delegate = api.delegate else { return }
        do {
            try delegate.api(api, willSend: &request)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.invalidRequest(.init(reason: .other("the delegate stopped the request: \(error)"), method: route.method.rawValue))
        }
        try RequestBuilder.validate(HTTPHeaders(request.allHTTPHeaderFields ?? [:]), method: route.method)
    }

    /// Stage 3: the transport sends it, under Tern's own timer.
    private func send(_ request: TransportRequest) {
        let timeout = timeout
        let startDate = Date()
        let startTime = DispatchTime.now().uptimeNanoseconds
        let task = api.transport.send(request) { [self] result in
            let duration = TimeInterval(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9
            complete(result, request: request.urlRequest, timing: Response.Timing(start: startDate, duration: duration))
        }
        let timer = timeout.isFinite && timeout > 0 ? api.timers.schedule(after: timeout) { [self] in
            finish(.failure(APIError.timeout(.init(interval: timeout, method: route.method.rawValue, url: request.urlRequest.url))))
        } : nil
        let isFinished = state.withLock { state in
            if !state.isFinished {
                state.task = task
                state.timer = timer
            }
            return state.isFinished
        }
        if isFinished {
            task.cancel()
            timer.map(api.timers.cancel)
        }
    }

    /// Stages 4 to 6: what came back becomes a value or an error.
    private func complete(_ result: Result<TransportResponse, any Error>, request: URLRequest, timing: Response.Timing) {
        switch result {
        case .failure(let error as URLError) where error.code == .cancelled:
            finish(.failure(APIError.cancelled))
        case .failure(let error):
            finish(.failure(APIError.transportFailed(.init(underlying: error, method: route.method.rawValue, url: request.url))))
        case .success(let raw):
            finish(evaluate(Response(request: request, httpResponse: raw.httpResponse, body: raw.body, timing: timing)))
        }
    }

    private func evaluate(_ response: Response) -> Result<Value, any Error> {
        let parser = parser
        guard (options.validation ?? api.configuration.validation).accepts(response) else {
            return .failure(APIError.unacceptableStatus(.init(
                method: response.method, url: response.url, statusCode: response.statusCode,
                headers: response.headers, body: response.body, serverError: parser.serverError(from: response)
            )))
        }
        do {
            return .success(try decoding.decode(response, parser))
        } catch let error as APIError {
            return .failure(error)
        } catch {
            return .failure(APIError.parsingFailed(.init(
                type: String(describing: Value.self), method: response.method, url: response.url,
                statusCode: response.statusCode, codingPath: (error as? DecodingError)?.codingPathDescription ?? "",
                underlying: error, body: response.body
            )))
        }
    }

    /// Stage 7: the promise settles, once; whatever is still running stops.
    private func finish(_ result: Result<Value, any Error>) {
        let leftovers = state.withLock { state -> (task: (any TransportTask)?, timer: UInt64?, file: URL?)? in
            guard !state.isFinished else { return nil }
            state.isFinished = true
            defer { state = State(isFinished: true) }
            return (state.task, state.timer, state.temporaryFile)
        }
        guard let leftovers else { return }
        leftovers.timer.map(api.timers.cancel)
        if case .failure = result { leftovers.task?.cancel() }
        if let file = leftovers.file { try? FileManager.default.removeItem(at: file) }
        resolver.resolve(result)
    }
}
