import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// Upload and download progress on a request's promise, against the loopback server.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ProgressTests {
    /// Checks that the reports of one direction only grow, and returns them.
    func reports(_ all: [TransferProgress], _ direction: TransferProgress.Direction) -> [TransferProgress] {
        let reports = all.filter { $0.direction == direction }
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes < $1.completedBytes }, "not monotonic: \(reports.map(\.completedBytes))")
        return reports
    }

    @Test func anUploadReportsItsBodyUpToTheLastByte() async throws {
        let api = try TestAPI()
        let payload = patterned(bytes: 512 << 10)
        let seen = Recorder<TransferProgress>()
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: "/multipart"),
                                                        parameters: MultipartParameters(parts: [Part(name: "blob", data: payload, filename: "blob.bin")]))
            .onProgress { seen.append($0) }
            .value
        // Heard on the API's concurrent queue: the last report may come just after the result.
        #expect(await eventually { seen.items.last { $0.direction == .upload }?.completedBytes == Int64(echo.bodySize) })
        let uploads = reports(seen.items, .upload)
        #expect(uploads.last?.completedBytes == Int64(echo.bodySize))
        #expect(uploads.last?.totalBytes == Int64(echo.bodySize))
        #expect(uploads.last?.fractionCompleted == 1)
        #expect(uploads.dropLast().allSatisfy { ($0.fractionCompleted ?? 0) < 1 })
    }

    @Test func aDownloadReportsEveryByteAgainstTheAnnouncedLength() async throws {
        let api = try TestAPI()
        let size = 1 << 20
        let seen = Recorder<TransferProgress>()
        let body: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=\(size)"))
            .onProgress(in: DispatchQueue(label: "progress")) { seen.append($0) }
            .value
        #expect(body.count == size)
        // Delivered before the result on a serial queue; on another queue, possibly just after.
        #expect(await eventually { seen.items.last?.completedBytes == Int64(size) })
        // Coalesced: a queue that falls behind may hear only the last report.
        let downloads = reports(seen.items, .download)
        #expect(downloads.first?.totalBytes == Int64(size))
        #expect(downloads.allSatisfy { $0.totalBytes == Int64(size) })
    }

    @Test func aStepDerivedFromTheRequestReportsItsProgress() async throws {
        let api = try TestAPI()
        let seen = Recorder<TransferProgress>()
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/huge?bytes=100000"))
        let count = try await promise.map { $0.count }.onProgress(in: api.responseQueue) { seen.append($0) }.value
        #expect(count == 100_000)
        #expect(await eventually { seen.items.last?.completedBytes == 100_000 })
    }

    @Test func progressUpdatesEndWhenThePromiseSettles() async throws {
        let api = try TestAPI()
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/huge?bytes=300000"))
        var last: TransferProgress?
        for await progress in promise.progressUpdates { last = progress }
        #expect(last?.completedBytes == 300_000)
        #expect(last?.fractionCompleted == 1)
        #expect(promise.isPending == false)
    }

    // MARK: The channel

    @Test func reportsAreCoalescedWhileTheQueueIsBusy() async throws {
        let channel = ProgressChannel()
        let queue = DispatchQueue(label: "busy")
        let seen = Recorder<TransferProgress>()
        channel.observe(on: queue) { seen.append($0) }
        queue.suspend()
        for bytes in 1...1000 {
            channel.report(TransferProgress(direction: .download, completedBytes: Int64(bytes), totalBytes: 1000))
        }
        channel.report(TransferProgress(direction: .upload, completedBytes: 10, totalBytes: 10))
        queue.resume()
        #expect(await eventually { seen.items.count == 2 })
        #expect(seen.items.map(\.completedBytes) == [1000, 10])
    }

    /// On a concurrent queue two deliveries to one observer used to run at once, and a later
    /// report could overtake an earlier one (the thread sanitizer's slower runs showed it).
    /// Here the first delivery waits up to 0.3 s for the second: if the second can start
    /// meanwhile, it arrives first.
    @Test func reportsArriveInOrderOnAConcurrentQueue() async throws {
        let channel = ProgressChannel()
        let seen = Recorder<Int64>()
        let firstStarted = Recorder<Bool>()
        let secondStarted = DispatchSemaphore(value: 0)
        channel.observe(on: DispatchQueue(label: "concurrent", attributes: .concurrent)) { progress in
            if progress.completedBytes == 1 {
                firstStarted.append(true)
                _ = secondStarted.wait(timeout: .now() + 0.3)
            } else {
                secondStarted.signal()
            }
            seen.append(progress.completedBytes)
        }
        channel.report(TransferProgress(direction: .upload, completedBytes: 1, totalBytes: 2))
        #expect(await eventually { !firstStarted.items.isEmpty })
        channel.report(TransferProgress(direction: .upload, completedBytes: 2, totalBytes: 2))
        #expect(await eventually { seen.items.count == 2 })
        #expect(seen.items == [1, 2])
    }

    @Test func aReportComingWhileAnotherIsDeliveredGoesBeforeWhatIsQueuedAfterIt() async throws {
        // `progressUpdates` relies on it: the result, queued after the last report on the same
        // serial queue, ends the stream after that report, not before.
        let channel = ProgressChannel()
        let queue = DispatchQueue(label: "progress")
        let seen = Recorder<String>()
        let (firstStarted, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        channel.observe(on: queue) { progress in
            if progress.completedBytes == 1 {
                firstStarted.signal()
                release.wait()
            }
            seen.append("\(progress.completedBytes)")
        }
        channel.report(TransferProgress(direction: .download, completedBytes: 1, totalBytes: 2))
        firstStarted.wait()
        channel.report(TransferProgress(direction: .download, completedBytes: 2, totalBytes: 2))
        queue.async { seen.append("result") }
        release.signal()
        #expect(await eventually { seen.items.count == 3 })
        #expect(seen.items == ["1", "2", "result"])
    }

    @Test func anAttemptThatStartsOverReportsOnlyOnceItPassesTheLastReport() async throws {
        let channel = ProgressChannel()
        let seen = Recorder<Int64>()
        let queue = DispatchQueue(label: "progress")
        channel.observe(on: queue) { seen.append($0.completedBytes) }
        for bytes: Int64 in [0, 40, 80, 0, 40, 80, 120] {
            channel.report(TransferProgress(direction: .upload, completedBytes: bytes, totalBytes: 120))
            queue.sync {}  // delivered one by one
        }
        #expect(seen.items == [0, 40, 80, 120])
    }

    /// A redirect's body, and an error's a retry follows, come before the answer's: neither is
    /// reported, so a download's and a request's reports only grow and reach 1.0 with the
    /// answer's last byte, over the network as the transport reads it.
    @Test(arguments: [false, true]) func onlyTheAnswersBodyReportsProgress(download: Bool) async throws {
        let size = 200_000
        let body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 11) })
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let answer = switch requests.items.count {
                case 1: "HTTP/1.1 301 Moved\r\nLocation: /busy\r\nContent-Length: 55\r\n\r\n" + String(repeating: "m", count: 55)
                case 2: "HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 70\r\n\r\n" + String(repeating: "b", count: 70)
                default: "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n"
                }
                guard connection.send(answer) else { return }
                if requests.items.count > 2, !connection.send(Array(body)) { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: server.baseURL, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.001, jitter: false)),
                              transport: TestTransport.make(), responseQueue: .global())
        let seen = Recorder<TransferProgress>()
        let progressQueue = DispatchQueue(label: "progress")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-progress-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if download {
            let file = try await api.download(route: .get("/file"), to: directory.appendingPathComponent("file.bin"))
                .onProgress(in: progressQueue) { seen.append($0) }.value
            #expect(try Data(contentsOf: file.fileURL) == body)
        } else {
            let answer: Data = try await api.request(route: .get("/file")).onProgress(in: progressQueue) { seen.append($0) }.value
            #expect(answer == body)
        }
        #expect(requests.items.count == 3)
        #expect(await eventually { seen.items.last?.completedBytes == Int64(size) })
        let downloads = reports(seen.items, .download)
        #expect(downloads.allSatisfy { $0.totalBytes == Int64(size) }, "\(downloads.map { "\($0.completedBytes)/\($0.totalBytes ?? -1)" })")
        #expect(downloads.dropLast().allSatisfy { ($0.fractionCompleted ?? 0) < 1 })
    }

    @Test func aLateObserverHearsTheLatestAtOnce() async throws {
        let channel = ProgressChannel()
        channel.report(TransferProgress(direction: .download, completedBytes: 7, totalBytes: nil))
        let seen = Recorder<TransferProgress>()
        channel.observe(on: .global()) { seen.append($0) }
        #expect(await eventually { seen.items.count == 1 })
        #expect(seen.items.first?.fractionCompleted == nil)
    }

    @Test func aStormOfReportsReachesEveryObserverInOrderAndLastBeforeTheResult() async throws {
        // One thread reports as a transport does while observers join on serial and concurrent
        // queues, each slower than the reports, so that reports keep coming while deliveries
        // run; each hears an increasing sequence ending with the last report, and on a serial
        // queue the result queued after that report comes after it.
        let channel = ProgressChannel()
        let total: Int64 = 20_000
        let serial = DispatchQueue(label: "serial")
        let concurrent = DispatchQueue(label: "concurrent", attributes: .concurrent)
        let heard = (0..<6).map { _ in Recorder<Int64>() }
        let observersAdded = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for (index, recorder) in heard.enumerated() {
                channel.observe(on: index.isMultiple(of: 2) ? serial : concurrent) { progress in
                    usleep(300)
                    recorder.append(progress.completedBytes)
                }
                usleep(500)
            }
            observersAdded.signal()
        }
        for bytes in 1...total {
            channel.report(TransferProgress(direction: .download, completedBytes: bytes, totalBytes: total))
            if bytes.isMultiple(of: 5_000), bytes < total { usleep(1_000) }
        }
        observersAdded.wait()
        let result = Recorder<Int64>()
        serial.async { result.append(heard[0].items.last ?? 0) }
        for recorder in heard {
            #expect(await eventually { recorder.items.last == total })
            let items = recorder.items
            #expect(zip(items, items.dropFirst()).allSatisfy { $0 < $1 }, "out of order")
        }
        #expect(await eventually { result.items.count == 1 })
        #expect(result.items == [total])
    }
}
