import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download cancelled at its last byte, fifty times over, from each place a cancel can come
/// from: its progress handler, another thread told by the progress handler, and the task that
/// awaits it being cancelled. Whatever wins, the directory holds the whole destination alone, or
/// the kept partial file and its resume record, which read back and resume to the whole file;
/// never a record beside a finished file, never part of the destination.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(5))) struct LastByteCancelAttackTests {
    enum Place: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case progressHandler, otherThread, awaitingTask
        var testDescription: String { rawValue }
    }

    @Test(arguments: Place.allCases) func aCancelAtTheLastByte(from place: Place) async throws {
        let outcomes = try await CancelledDownloads.run(50, name: "last-byte") { api, route, destination, _ in
            switch place {
            case .progressHandler:
                let promise = api.download(route: route, to: destination)
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(CancelledDownloads.size) { promise.cancel() } }
                return await promise.result
            case .otherThread:
                let promise = api.download(route: route, to: destination)
                let canceller = CancelledDownloads.canceller(of: promise)
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(CancelledDownloads.size) { canceller.signal() } }
                let result = await promise.result
                canceller.signal()  // lets the thread go when no report said the last byte
                return result
            case .awaitingTask:
                let lastByte = DispatchSemaphore(value: 0)
                let promise = api.download(route: route, to: destination)
                _ = promise.onProgress(in: .global()) { if $0.completedBytes >= Int64(CancelledDownloads.size) { lastByte.signal() } }
                let waiting = Task.onTestThreads { () async -> Result<DownloadedFile, any Error> in
                    do { return .success(try await promise.value) } catch { return .failure(error) }
                }
                let cancelling = Thread {
                    lastByte.wait()
                    waiting.cancel()
                }
                cancelling.start()
                let result = await waiting.value
                lastByte.signal()
                return result
            }
        }
        // Which ways it went, for whoever reads the log: every one of them is correct.
        print("LastByteCancelAttackTests \(place): \(outcomes)")
    }
}
