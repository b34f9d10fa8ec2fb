import Dispatch
import Foundation
import Testing
import Tern

struct Product: Codable, Sendable, Equatable {
    let name: String
    let price: Int
}

struct ShopError: Codable, Error, Sendable, Equatable {
    let code: Int
    let message: String
}

/// The API the pipeline tests use, pointed at the loopback server. Callbacks run on a global
/// queue: the tests never depend on the main queue being serviced. Unless a test passes a
/// configuration, nothing is retried, so that failures are fast and counted once.
final class TestAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
    let baseURL: String

    init(
        baseURL: String? = nil,
        parser: any ResponseParser = JSONParser(errorType: ShopError.self),
        configuration: APIConfiguration = APIConfiguration(retryPolicy: .never),
        transport: (any Transport)? = nil,
        responseQueue: DispatchQueue = .global(),
        clock: (any APIClock)? = nil
    ) throws {
        self.baseURL = try baseURL ?? TestServer.baseURL
        super.init(responseParser: parser, configuration: configuration, transport: transport ?? TestTransport.make(), responseQueue: responseQueue, clock: clock)
    }

    /// Sends `parameters` to the echo route and returns what the server received.
    func echo(_ method: HTTPMethod = .post, _ parameters: (any RequestParameters)? = nil, endpoint: String = "/echo",
              options: RequestOptions = RequestOptions()) async throws -> Echo {
        try await request(route: route(method, endpoint: endpoint), parameters: parameters, options: options).value
    }
}

extension APIError {
    /// The case's name, for tests that only care which case it is.
    var caseName: String {
        switch self {
        case .invalidRequest: "invalidRequest"
        case .encodingFailed: "encodingFailed"
        case .transportFailed: "transportFailed"
        case .timeout: "timeout"
        case .cancelled: "cancelled"
        case .responseTooLarge: "responseTooLarge"
        case .redirectFailed: "redirectFailed"
        case .fileFailed: "fileFailed"
        case .pinningFailed: "pinningFailed"
        case .unacceptableStatus: "unacceptableStatus"
        case .parsingFailed: "parsingFailed"
        case .promise: "promise"
        case .authentication: "authentication"
        }
    }
}

/// The `APIError` a promise failed with, or `nil` if it succeeded or failed otherwise.
func apiError<T>(of promise: Promise<T>) async -> APIError? {
    if case .failure(let error as APIError) = await promise.result { error } else { nil }
}

/// The `ResponseTooLarge` a promise failed with; records an issue naming what came instead.
func tooLarge<T>(_ promise: Promise<T>) async -> APIError.ResponseTooLarge? {
    let error = await apiError(of: promise)
    guard case .responseTooLarge(let failure)? = error else {
        Issue.record("expected responseTooLarge, got \(String(describing: error))")
        return nil
    }
    return failure
}

/// The `RedirectFailure` a promise failed with; records an issue naming what came instead.
func redirectFailure<T>(_ promise: Promise<T>) async -> APIError.RedirectFailure? {
    let error = await apiError(of: promise)
    guard case .redirectFailed(let failure)? = error else {
        Issue.record("expected redirectFailed, got \(String(describing: error))")
        return nil
    }
    return failure
}

extension Promise<Response> {
    /// How the request ended, as a child process prints it: "answered <status>", "failed typed
    /// <case>", or "failed untyped <error>".
    var outcome: String {
        get async {
            switch await result {
            case .success(let response): "answered \(response.statusCode)"
            case .failure(let error as APIError): "failed typed \(error.caseName)"
            case .failure(let error): "failed untyped \(error)"
            }
        }
    }
}
