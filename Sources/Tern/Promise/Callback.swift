import Dispatch

/// A promise that has settled and may have callbacks waiting to run.
///
/// The delivery loop works through these without recursion, so a chain of any length runs
/// in constant stack depth.
protocol Deliverable: AnyObject, Sendable {
    /// Runs the waiting callbacks: those bound to `currentQueue` (or to no queue) right here,
    /// the others by dispatching to their own queue. Promises they settle go into `work`.
    func deliver(on currentQueue: DispatchQueue?, into work: inout WorkList)
}

/// One registered reaction to a promise's result.
struct Callback<Value: Sendable>: Sendable {
    /// Where the body runs; `nil` for Tern's own bookkeeping, which may run on any thread.
    /// User code always has a queue.
    let queue: DispatchQueue?
    /// Reacts to the result and returns a promise it settled (or found settled) that now needs
    /// delivery, so the loop can go on without a queue hop or a deeper stack.
    let body: @Sendable (Result<Value, any Error>) -> (any Deliverable)?
}

/// The callbacks of one promise, in registration order, with no allocation for the common single one.
enum Callbacks<Value: Sendable>: Sendable {
    case none
    case one(Callback<Value>)
    case many([Callback<Value>])

    var isEmpty: Bool {
        if case .none = self { true } else { false }
    }

    mutating func append(_ callback: Callback<Value>) {
        switch self {
        case .none: self = .one(callback)
        case .one(let first): self = .many([first, callback])
        case .many(var all):
            self = .none  // keeps `all` uniquely referenced, so the append does not copy
            all.append(callback)
            self = .many(all)
        }
    }

    func forEach(_ body: (Callback<Value>) -> Void) {
        switch self {
        case .none: break
        case .one(let callback): body(callback)
        case .many(let all): all.forEach(body)
        }
    }
}

/// Settled promises whose callbacks still have to run, first in, first out.
///
/// The first item sits inline, so a linear chain never allocates here.
struct WorkList {
    private var head: (any Deliverable)?
    private var tail: [any Deliverable] = []
    private var tailIndex = 0

    mutating func append(_ item: any Deliverable) {
        if head == nil && tailIndex == tail.count {
            head = item
        } else {
            tail.append(item)
        }
    }

    mutating func next() -> (any Deliverable)? {
        if let item = head {
            head = nil
            return item
        }
        guard tailIndex < tail.count else { return nil }
        defer { tailIndex += 1 }
        return tail[tailIndex]
    }

    /// Delivers `first` and everything its callbacks settle in turn, from a thread running on
    /// `queue` (or, with `nil`, from a thread that belongs to no queue of ours).
    static func drain(_ first: any Deliverable, on queue: DispatchQueue?) {
        var work = WorkList()
        work.append(first)
        while let item = work.next() {
            item.deliver(on: queue, into: &work)
        }
    }
}
