/// How many bytes of request bodies a ``URLSessionTransport`` holds in memory at once, on Linux,
/// where a body of up to 16 MiB is read whole before it is sent (see
/// ``URLSessionTransport/prepare(_:)``): requests past the budget wait their turn, in order,
/// until a body held ends. One alone always runs, whatever its size. Without it, a thousand
/// uploads of files over HTTPS, where nothing else holds requests back, were read into memory at
/// once. A value its owner guards; unit-tested without a transport.
struct BodyMemoryBudget<Waiter: AnyObject> {
    /// The most bytes held at once, but for one body alone.
    let limit: Int
    private var held: [ObjectIdentifier: Int] = [:]
    private var heldBytes = 0
    private var waiting: [(waiter: Waiter, bytes: Int)] = []

    /// The budget of Tern's transports: four bodies of the largest read whole.
    static var defaultLimit: Int { 64 << 20 }

    init(limit: Int = Self.defaultLimit) {
        self.limit = limit
    }

    /// Whether `waiter`, whose body takes `bytes` in memory, may read it now; counted if so, else
    /// it waits.
    mutating func admit(_ waiter: Waiter, bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        guard waiting.isEmpty, fits(bytes) else {
            waiting.append((waiter, bytes))
            return false
        }
        hold(waiter, bytes)
        return true
    }

    /// `waiter`'s body is no longer held: those waiting that now fit, counted, in order.
    mutating func release(_ waiter: Waiter) -> [Waiter] {
        guard let bytes = held.removeValue(forKey: ObjectIdentifier(waiter)) else { return [] }
        heldBytes -= bytes
        return admitWaiting()
    }

    private mutating func admitWaiting() -> [Waiter] {
        var admitted: [Waiter] = []
        while let next = waiting.first, fits(next.bytes) {
            waiting.removeFirst()
            hold(next.waiter, next.bytes)
            admitted.append(next.waiter)
        }
        return admitted
    }

    /// Takes `waiter` out of the line (cancelled before it was admitted): those waiting behind
    /// it that now fit, counted, in order; `nil` if it was not waiting.
    mutating func withdraw(_ waiter: Waiter) -> [Waiter]? {
        guard let index = waiting.firstIndex(where: { $0.waiter === waiter }) else { return nil }
        waiting.remove(at: index)
        return admitWaiting()
    }

    /// Whether `waiter` waits in the line.
    func isWaiting(_ waiter: Waiter) -> Bool {
        waiting.contains { $0.waiter === waiter }
    }

    /// The bytes held now.
    var bytesHeld: Int { heldBytes }

    private func fits(_ bytes: Int) -> Bool {
        heldBytes == 0 || heldBytes + bytes <= limit
    }

    private mutating func hold(_ waiter: Waiter, _ bytes: Int) {
        held[ObjectIdentifier(waiter)] = bytes
        heldBytes += bytes
    }
}
