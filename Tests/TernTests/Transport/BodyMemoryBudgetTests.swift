import Testing
@testable import TernTransport

/// The budget of bodies held in memory, as a value: who reads now, who waits, in what order.
@Suite(.onTestThreads) struct BodyMemoryBudgetTests {
    final class Request {}

    @Test func bodiesPastTheLimitWaitInOrderAndOneAloneAlwaysRuns() {
        var budget = BodyMemoryBudget<Request>(limit: 10)
        let (a, b, c, d, huge) = (Request(), Request(), Request(), Request(), Request())
        let ids = { (requests: [Request]) in requests.map(ObjectIdentifier.init) }
        var admitted = [budget.admit(a, bytes: 6), budget.admit(b, bytes: 6)]
        // Small enough, but behind one waiting: it waits too. A body not read never waits.
        admitted += [budget.admit(c, bytes: 1), budget.admit(Request(), bytes: 0)]
        #expect(admitted == [true, false, false, true])
        var next = budget.release(a)
        #expect(ids(next) == ids([b, c]) && budget.bytesHeld == 7)
        admitted = [budget.admit(d, bytes: 4), budget.admit(huge, bytes: 40)]
        #expect(admitted == [false, false])
        // Withdrawn from the line (once): the one behind it does not fit yet.
        let withdrawn = [budget.withdraw(d).map(ids), budget.withdraw(d).map(ids)]
        #expect(withdrawn == [[], nil])
        next = budget.release(b)
        #expect(next.isEmpty)
        // Alone, past the limit: it runs.
        next = budget.release(c)
        #expect(ids(next) == ids([huge]) && budget.bytesHeld == 40)
        // Released again, or never held: nothing changes.
        next = budget.release(c) + budget.release(d)
        #expect(next.isEmpty && budget.bytesHeld == 40)
        next = budget.release(huge)
        #expect(next.isEmpty && budget.bytesHeld == 0)
    }

    @Test func theHeadOfTheLineWithdrawnLetsInThoseBehindItThatFit() {
        var budget = BodyMemoryBudget<Request>(limit: 10)
        let (a, big, small) = (Request(), Request(), Request())
        let admitted = [budget.admit(a, bytes: 6), budget.admit(big, bytes: 8), budget.admit(small, bytes: 3)]
        #expect(admitted == [true, false, false])
        #expect(budget.isWaiting(big) && budget.isWaiting(small) && !budget.isWaiting(a))
        let next = budget.withdraw(big)
        #expect(next?.map(ObjectIdentifier.init) == [ObjectIdentifier(small)])
        #expect(!budget.isWaiting(small) && budget.bytesHeld == 9)
    }
}
