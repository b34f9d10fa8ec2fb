import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TernTransport

/// One attempt as it went to the transport: what its head and its end are judged with. A value
/// that the attempt's ``ResponseCollector`` holds, so that hearing the end makes no closure.
struct SentAttempt: Sendable {
    /// The request as sent.
    let request: URLRequest
    /// The attempt's number in the request's state machine.
    let attempt: Int
    /// The stop of the redirect chain the attempt is on.
    let leg: Leg
    /// The attempt's delegate and its refresh coordinator, read once as it began: the API keeps
    /// them behind its lock.
    let signer: Signer?
    /// The credentials' generation the attempt was signed with.
    let generation: Int
    /// Whether what follows the attempt's head or end calls the app's code.
    let callsAppCode: Bool
    /// Whether one of the transport thread's jobs sent it (see ``EndPlacement``).
    let sentFromJob: Bool
    /// When it was handed to the transport, by the wall clock and by a monotonic one.
    private let startDate = Date()
    private let startTime = DispatchTime.now().uptimeNanoseconds

    init(request: URLRequest, attempt: Int, leg: Leg, signer: Signer?, generation: Int, callsAppCode: Bool, sentFromJob: Bool) {
        self.request = request
        self.attempt = attempt
        self.leg = leg
        self.signer = signer
        self.generation = generation
        self.callsAppCode = callsAppCode
        self.sentFromJob = sentFromJob
    }

    /// From when the attempt was handed to the transport until now.
    func timing() -> Response.Timing {
        Response.Timing(start: startDate, duration: TimeInterval(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9)
    }
}
