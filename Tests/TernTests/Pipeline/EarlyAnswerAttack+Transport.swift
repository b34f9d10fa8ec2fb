import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// The hostile transports and what the attacks use, for the suites that share them.
enum EarlyAnswer {}

extension EarlyAnswer {
    /// What a hostile transport reports, in order.
    enum Step: Sendable {
        /// Body bytes sent so far, of the body's length.
        case sent(Int64, of: Int64?)
        case head(Int, [String: String] = [:])
        case chunk(String)
        /// The end: complete, or failed with the code.
        case end(URLError.Code? = nil)
        /// Runs the test's code between two events (a cancel, the reader leaving).
        case run(Hook)
    }

    /// Where a transport reports an answer: on `send`'s own thread, or on another while `send`
    /// waits for it; either way, all of it before `send` returns its task.
    enum Place: Sendable, CaseIterable {
        case inside
        case otherThread
    }

    /// What a task's `cancel()` does: report the end at once, inside `cancel()`, unless the
    /// exchange has ended (as a transport may), or report nothing.
    enum CancelStyle: Sendable {
        case endsInside
        case silent
    }

    /// Code a test hands a transport to run between two events, once the test has set it: the
    /// transport waits for that, so that the step is deterministic.
    final class Hook: Sendable {
        private let action = Locked<(@Sendable () -> Void)?>(nil)
        private let ready = DispatchSemaphore(value: 0)

        func set(_ action: @escaping @Sendable () -> Void) {
            self.action.withLock { $0 = action }
            ready.signal()
        }

        func fire() {
            _ = ready.wait(timeout: .now() + 10)
            ready.signal()
            // Run once and let go: what it holds (a promise, a stream) must not outlive the test's API.
            action.withLock { action in
                defer { action = nil }
                return action
            }?()
        }
    }

    /// Answers each attempt with its steps (the last list for every attempt past them), all of
    /// them before `send` returns a task that holds the receiver and the transport, as a real
    /// transport's does. Skips the chunks after a head or chunk it was told to stop at, and
    /// anything after the end, unless `unruly`: then it reports every step it is given, and its
    /// task's cancel reports an end even after the end.
    class Hostile: Transport, @unchecked Sendable {   // unchecked: a class one test subclasses; its state is `let`s
        let place: Place
        let cancelStyle: CancelStyle
        let unruly: Bool
        /// Whether it holds back what follows a head or chunk told to pause until its task is
        /// resumed: `send` then returns as the transfer pauses.
        let pauses: Bool
        let answers: [[Step]]
        /// Each attempt's request, as sent.
        let requests = Recorder<URLRequest>()
        /// Each call of a task's `cancel()`.
        let cancels = Recorder<URL>()
        /// Each pause it held, and each nobody resumed within 10 s.
        let pausesHeld = Recorder<URL>()
        let stuck = Recorder<URL>()

        init(_ place: Place = .inside, cancel: CancelStyle = .endsInside, unruly: Bool = false, pauses: Bool = false, answers: [[Step]]) {
            self.pauses = pauses
            self.place = place
            self.cancelStyle = cancel
            self.unruly = unruly
            self.answers = answers
        }

        convenience init(_ place: Place = .inside, cancel: CancelStyle = .endsInside, unruly: Bool = false, pauses: Bool = false, _ steps: [Step]) {
            self.init(place, cancel: cancel, unruly: unruly, pauses: pauses, answers: [steps])
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            requests.append(request.urlRequest)
            return send(request, to: receiver, steps: answers[min(requests.items.count, answers.count) - 1])
        }

        /// Answers with `steps`.
        func send(_ request: TransportRequest, to receiver: any TransportReceiver, steps: [Step]) -> any TransportTask {
            let task = HeldTask(transport: self, receiver: receiver, url: request.urlRequest.url!)
            switch place {
            case .inside:
                task.play(steps) {}
            case .otherThread:
                let played = DispatchSemaphore(value: 0)
                Thread {
                    task.play(steps) { played.signal() }
                    played.signal()
                }.start()
                played.wait()
            }
            return task
        }
    }

    /// One exchange's task: it holds its receiver (the pipeline's) and its transport.
    final class HeldTask: TransportTask {
        let transport: Hostile
        let receiver: any TransportReceiver
        let url: URL
        private let ended = Locked(false)
        /// Resumes so far, and whether a pause waits for the next: a resume that comes between
        /// the pipeline's `.pause` and the wait (the reader made room at once) is not lost.
        private let resumes = Locked((count: 0, waiting: false))
        private let resumed = DispatchSemaphore(value: 0)

        init(transport: Hostile, receiver: any TransportReceiver, url: URL) {
            self.transport = transport
            self.receiver = receiver
            self.url = url
        }

        /// Reports `steps`; calls `pausing` as it first waits to be resumed.
        func play(_ steps: [Step], pausing: () -> Void) {
            var stopped = false
            var hasPaused = false
            /// The resumes before an event was reported, which a later one's pause waits past.
            func resumesNow() -> Int { resumes.withLock { $0.count } }
            /// Waits for the task's resume after a pause, if the transport pauses and no resume
            /// has come since `before`.
            func obey(_ decision: TransferDecision, resumesBefore before: Int) {
                guard decision == .pause, transport.pauses, !ended.withLock({ $0 }) else { return }
                let waits = resumes.withLock { resumes in
                    resumes.waiting = resumes.count == before
                    return resumes.waiting
                }
                transport.pausesHeld.append(url)
                if !hasPaused { pausing() }
                hasPaused = true
                if waits, resumed.wait(timeout: .now() + 10) == .timedOut { transport.stuck.append(url) }
            }
            for step in steps {
                switch step {
                case .sent(let sent, let total):
                    guard transport.unruly || !ended.withLock({ $0 }) else { continue }
                    receiver.didSendBodyData(sent, of: total)
                case .head(let status, let fields):
                    let head = ResponseHead(url: url, statusCode: status, httpVersion: "HTTP/1.1", headers: HTTPHeaders(fields))!
                    let before = resumesNow()
                    let decision = receiver.didReceive(head)
                    stopped = decision == .stop && !transport.unruly
                    obey(decision, resumesBefore: before)
                case .chunk(let text):
                    // Nothing after a stop, or after a cancel that ended the exchange.
                    guard transport.unruly || (!stopped && !ended.withLock({ $0 })) else { continue }
                    let before = resumesNow()
                    let decision = receiver.didReceive(Data(text.utf8))
                    stopped = decision == .stop
                    obey(decision, resumesBefore: before)
                case .end(let code):
                    let first = ended.withLock { ended in
                        defer { ended = true }
                        return !ended
                    }
                    guard first || transport.unruly else { continue }
                    receiver.didComplete(with: code.map { URLError($0) })
                case .run(let hook):
                    hook.fire()
                }
            }
        }

        func cancel() {
            transport.cancels.append(url)
            let report = switch transport.cancelStyle {
            case .endsInside: ended.withLock { ended in
                defer { ended = true }
                return !ended || transport.unruly
            }
            case .silent: false
            }
            if report { receiver.didComplete(with: URLError(.cancelled)) }
            resumeReceiving()
        }

        func resumeReceiving() {
            let wasWaiting = resumes.withLock { resumes in
                resumes.count += 1
                defer { resumes.waiting = false }
                return resumes.waiting
            }
            if wasWaiting { resumed.signal() }
        }
    }

    /// Answers each request whole with its own path.
    final class EchoesPath: Hostile, @unchecked Sendable {
        override func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            let path = request.urlRequest.url!.path
            return send(request, to: receiver, steps: [.head(200, ["Content-Type": "text/plain"]), .chunk(path), .end()])
        }
    }
}
