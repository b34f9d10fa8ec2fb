import Foundation
import Testing
import Tern
import TernTesting

/// `for try await page in api.pages(…)`: lazy, complete, and cancelled with its Task.
@Suite(.onTestThreads) struct PageSequenceTests {
    let catalog: CatalogServer
    var api: TestAPI { catalog.api }

    init() throws {
        catalog = try CatalogServer()
    }

    @Test func everyPageInOrderWithoutTheEmptyLastOne() async throws {
        var names: [String] = []
        var indexes: [Int] = []
        for try await page in api.pages(APIRequest<[Product]>(.get("/numbered"))) {
            names += page.elements.map(\.name)
            indexes.append(page.position)
        }
        #expect(names == ["item-1", "item-2", "item-3", "item-4", "item-5"])
        #expect(indexes == [0, 1, 2])
        #expect(catalog.sent("page", to: "/numbered") == ["1", "2", "3", "4"])
    }

    @Test func linkHeadersAndCursorsWork() async throws {
        var linked = 0
        for try await page in api.pages(APIRequest<[Product]>(.get("/linked")), style: .linkHeader) {
            linked += page.elements.count
        }
        var cursored = 0
        let cursor = api.pages(APIRequest<[Product]>(.get("/cursor")), style: .cursor(parameter: "after", from: .body("meta.next")), collectionKeyPath: "data.items")
        for try await page in cursor {
            cursored += page.elements.count
        }
        #expect(linked == 5 && cursored == 5)
    }

    /// A server's main queue, which nobody services while its main thread waits: awaiting pages
    /// runs none of the app's code, so it must not wait for that queue. Each caller's page was
    /// once passed on through a `map` on it, and the sequence hung after the first page.
    @Test(.timeLimit(.minutes(1))) func pagesComeThroughAResponseQueueNobodyServices() async throws {
        let unserviced = DispatchQueue(label: "tern.tests.unserviced")
        unserviced.suspend()
        defer { unserviced.resume() }
        var names: [String] = []
        let request = APIRequest<[Product]>(.get("/numbered"), options: RequestOptions(timeout: 10, responseQueue: unserviced))
        for try await page in api.pages(request) {
            names += page.elements.map(\.name)
        }
        #expect(names == ["item-1", "item-2", "item-3", "item-4", "item-5"])
    }

    @Test func aPageIsRequestedOnlyWhenTheLoopAsksForIt() async throws {
        let pages = api.pages(APIRequest<[Product]>(.get("/numbered")))
        var iterator = pages.makeAsyncIterator()
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(catalog.requests.items.isEmpty)
        let first = try await iterator.next()
        #expect(first?.elements.count == 2)
        #expect(catalog.requests.items.count == 1)
        // Each iteration starts over at the first page.
        for try await page in pages {
            #expect(page.position == 0)
            break
        }
        #expect(catalog.sent("page", to: "/numbered") == ["1", "1"])
    }

    @Test func cancellingTheTaskCancelsTheRequestInFlight() async throws {
        let pages = api.pages(APIRequest<[Product]>(.get("/numbered"), parameters: URLParameters(["stall": "always"])))
        let loop = Task.onTestThreads {
            var count = 0
            for try await page in pages { count += page.elements.count }
            return count
        }
        #expect(await eventually { catalog.requests.items.count == 1 })
        loop.cancel()
        let result = await outcome(of: loop)
        guard case .failure(let error as APIError) = result, error.isCancellation else {
            Issue.record("expected the loop to end cancelled, got \(result)")
            return
        }
        // The client closed the connection: the server, which waits for that, has let it go.
        #expect(await eventuallyClosed(catalog.server))
    }

    @Test func aFailingPageEndsTheLoopWithItsError() async throws {
        var seen = 0
        do {
            for try await _ in api.pages(APIRequest<[Product]>(.get("/missing"))) { seen += 1 }
            Issue.record("the loop should have thrown")
        } catch let error as APIError {
            #expect(error.caseName == "unacceptableStatus")
        }
        #expect(seen == 0)
    }
}
