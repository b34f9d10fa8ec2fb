#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// One HTTP cache shared by APIs over HTTPS with a private authority, whose pins differ: what
/// one kept is never what a download or a stream of another gets, and an answer kept under
/// one set of pins is not served once the pins have changed to keys the server no longer has.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PinnedCacheFeatureTests {
    static let wrongPin = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()

    /// An HTTPS origin whose every answer is kept for ten minutes and names its number.
    final class Origin: Sendable {
        let certificates: TestCertificates
        let server: LoopbackServer
        let relay: TLSRelay
        let asked = Recorder<String>()

        init() throws {
            certificates = try TestCertificates()
            let asked = asked
            server = try LoopbackServer { request in
                asked.append(request.path)
                return ServerResponse(headers: ["Cache-Control": "public, max-age=600"], body: Data("v\(asked.items.count)".utf8))
            }
            relay = try TLSRelay(certificates: certificates, to: server.port)
        }

        deinit {
            relay.stop()
            server.stop()
        }
    }

    func api(_ origin: Origin, _ cache: HTTPCache, transport: any Transport, pins: [String]?) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, certificatePins: try pins.map { try CertificatePins(["127.0.0.1": $0]) },
                                                    cache: cache),
                    transport: transport, responseQueue: .global())
    }

    func isPinningFailure<T>(_ result: Result<T, any Error>) -> Bool {
        if case .failure(APIError.pinningFailed) = result { true } else { false }
    }

    @Test(arguments: [false, true]) func aDownloadOrAStreamOfAPinnedAPIIsNeverAnsweredWithWhatAnotherKept(onDisk: Bool) async throws {
        let origin = try Origin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pinned-cache-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory.appendingPathComponent("cache")) : HTTPCache()
        let transport = try CurlTransport(trusting: origin.certificates.authority)
        let url = origin.relay.baseURL + "/kept"
        let open = try api(origin, cache, transport: transport, pins: nil)
        let first: String = try await open.request(route: .get(url)).value
        #expect(first == "v1")
        let wrong = try api(origin, cache, transport: transport, pins: [Self.wrongPin])
        let destination = directory.appendingPathComponent("download")
        let download = await wrong.download(route: .get(url), to: destination).result
        #expect(isPinningFailure(download), "\(download)")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        var streamed: [String] = []
        var streamError: (any Error)?
        do {
            for try await line in wrong.stream(route: .get(url)).lines { streamed.append(line) }
        } catch {
            streamError = error
        }
        #expect(isPinningFailure(Result<Void, any Error>.failure(streamError ?? CancellationError())) && streamed.isEmpty, "\(String(describing: streamError)), \(streamed)")
        // Kept under the right pin, then the pins changed to a key the server does not have.
        let rightPin = try origin.certificates.pin(ofKey: "server.key")
        let right = try api(origin, cache, transport: transport, pins: [rightPin])
        let fetched: String = try await right.request(route: .get(url + "?pinned")).value
        let kept: String = try await right.request(route: .get(url + "?pinned")).value
        #expect(fetched == kept)
        let changed = try api(origin, cache, transport: transport, pins: [Self.wrongPin])
        let afterChange = await (changed.request(route: .get(url + "?pinned")) as Promise<String>).result
        #expect(isPinningFailure(afterChange.mapError { $0 }), "\(afterChange)")
        let downloadAfterChange = await changed.download(route: .get(url + "?pinned"), to: destination).result
        #expect(isPinningFailure(downloadAfterChange), "\(downloadAfterChange)")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }
}
#endif
