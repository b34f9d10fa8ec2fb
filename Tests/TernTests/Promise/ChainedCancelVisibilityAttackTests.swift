import Foundation
import Dispatch
import Testing
@testable import Tern
@testable import TernCore
import TernTesting

/// A cancel is heard only once its handlers have run, down a chain too: a step (`map`, `then`,
/// `recover`, `onResult`) cancelled from another thread is heard as cancelled only after the
/// handlers of the promise it waits on, which its cancel cancels in turn. Whoever awaits
/// `download(…).map { … }` hears "cancelled" once the download's handler has kept its bytes.
/// (Attack52's break suite: before 83a6181 the step was heard first.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ChainedCancelVisibilityAttackTests {
    let queue = DispatchQueue(label: "tern.test.chained-cancel-visibility")

    @Test(arguments: ["map", "then", "recover", "onResult"]) func aStepIsHeardAfterTheHandlersItsCancelRuns(_ step: String) async {
        let (producer, resolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Int>()
        resolver.onCancel {
            usleep(20_000)   // a handler that takes a moment (a download keeping its bytes)
            handled.append(0)
        }
        let derived: Promise<Int> = switch step {
        case "map": producer.map { $0 }
        case "then": producer.then { Promise(value: $0) }
        case "recover": producer.recover { _ in 0 }
        default: producer.onResult { _ in }
        }
        let heard = await CancelVisibilityAttackTests.heardAfterACancelFromAnotherThread(derived, handled: handled)
        #expect(heard == "cancelled, 1 handled", "\(step)")
        #expect(await eventually { handled.items == [0] })
        withExtendedLifetime(resolver) {}   // let go unsettled, it would fail the producer as abandoned
    }
    /// The download of LastByteCancelAttackTests, through a `map`, cancelled from another
    /// thread near its last byte, fifty times: whoever hears "cancelled" must find the kept
    /// partial file and its record, nothing, or the whole destination alone.
    @Test(.timeLimit(.minutes(3))) func aMappedDownloadCancelledFromAnotherThread() async throws {
        let size = CancelledDownloads.size
        let outcomes = try await CancelledDownloads.run(50, name: "mapped-cancel") { api, route, destination, round in
            let mapped = api.download(route: route, to: destination).map { $0 }
            let canceller = CancelledDownloads.canceller(of: mapped)
            let threshold = Int64(round % 2 == 0 ? size : size / 2)
            _ = mapped.onProgress(in: .global()) { if $0.completedBytes >= threshold { canceller.signal() } }
            let result = await mapped.result
            canceller.signal()
            return result
        }
        print("ChainedCancelVisibilityAttackTests: \(outcomes)")
    }
}
