import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The paginator's rules, without I/O: one load at a time, stale loads ignored, loops ended.
@Suite(.onTestThreads) struct PaginationStateTests {
    typealias State = PaginationState<Int>

    func response(_ body: String = "[]") -> Response {
        let url = URL(string: "https://api.example.com/items")!
        return Response(request: URLRequest(url: url), httpResponse: HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: nil)!,
                        body: Data(body.utf8))
    }

    func begin(_ state: inout State) -> State.Load? {
        guard case .begin(let load) = state.start({ Promise<Page<Int>>(queue: .global(), state: PromiseState()) }) else { return nil }
        return load
    }

    func page(_ elements: [Int], next: PageCursor?, body: String? = nil) -> Result<(elements: [Int], body: Data, proposed: PageCursor?, response: Response), any Error> {
        .success((elements, Data((body ?? "\(elements)").utf8), next, response()))
    }

    @Test func aSecondCallJoinsTheLoadInFlight() throws {
        var state = State()
        let load = try #require(begin(&state))
        guard case .join(let joined) = state.start({ Promise<Page<Int>>(value: Page(elements: [], position: 9, hasNext: false, response: nil)) }) else {
            Issue.record("expected to join")
            return
        }
        #expect(joined === load.promise)
        #expect(state.isLoadingFirstPage)
    }

    @Test func aLoadFromBeforeAStartOverChangesNothing() throws {
        var state = State()
        let stale = try #require(begin(&state))
        let cancelled = state.startOver()
        #expect(cancelled?.promise === stale.promise)
        #expect(state.load == nil)
        let finished = state.finish(stale, with: page([1, 2], next: .number(2)), answered: [])
        #expect(finished == nil)
        #expect(state.elements.isEmpty && state.next == .first)
    }

    @Test func aLoadEveryCallerCancelledIsReplacedNotJoined() throws {
        var state = State()
        let cancelled = try #require(begin(&state))
        cancelled.promise.cancel()
        let fresh = try #require(begin(&state))
        #expect(fresh.number != cancelled.number && fresh.cursor == .first)
        // The cancelled one ends later, and changes nothing.
        let late = state.finish(cancelled, with: .failure(APIError.cancelled), answered: [])
        #expect(late == nil && state.load?.number == fresh.number)
        _ = state.finish(fresh, with: page([1, 2], next: .number(2)), answered: [])
        #expect(state.elements == [1, 2] && state.load == nil)
    }

    @Test func cancellationIsNotAnErrorToKeep() throws {
        var state = State()
        let load = try #require(begin(&state))
        _ = state.finish(load, with: .failure(APIError.cancelled), answered: [])
        #expect(state.lastError == nil && state.next == .first && state.load == nil)
        let again = try #require(begin(&state))
        _ = state.finish(again, with: .failure(APIError.timeout(.init(interval: 1, method: "GET", url: nil))), answered: [])
        #expect(state.lastError != nil)
    }

    @Test func repeatedCursorsRepeatedPagesAndEmptyPagesEndPagination() throws {
        var state = State()
        var load = try #require(begin(&state))
        _ = state.finish(load, with: page([1], next: .token("a")), answered: [])
        load = try #require(begin(&state))
        #expect(load.cursor == .token("a"))
        _ = state.finish(load, with: page([2], next: .token("a")), answered: [])
        #expect(state.next == nil)

        state = State()
        load = try #require(begin(&state))
        _ = state.finish(load, with: page([1], next: .number(2), body: "same"), answered: [])
        load = try #require(begin(&state))
        let repeated = state.finish(load, with: page([1], next: .number(3), body: "same"), answered: [])
        #expect(try repeated?.get().elements.isEmpty == true && state.elements == [1] && state.next == nil)

        state = State()
        load = try #require(begin(&state))
        _ = state.finish(load, with: page([], next: .number(2)), answered: [])
        #expect(state.next == nil)
        guard case .exhausted(index: 1) = state.start({ Promise(value: Page(elements: [], position: 0, hasNext: false, response: nil)) }) else {
            Issue.record("expected no next page")
            return
        }
    }

    @Test func aNextLinkBackToAnAnsweredURLEndsPagination() throws {
        var state = State()
        let first = URL(string: "https://api.example.com/items?page=1")!
        let load = try #require(begin(&state))
        _ = state.finish(load, with: page([1], next: .url(first)), answered: [.url(first)])
        #expect(state.next == nil)
    }
}
