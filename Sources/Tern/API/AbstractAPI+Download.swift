import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension AbstractAPI {
    /// Downloads a response's body to a file, streaming it to disk as it arrives, so that memory
    /// stays flat whatever its size.
    ///
    /// The body goes to a hidden file beside `destination` and is moved there only once it is
    /// complete and its response accepted: a failure never leaves a partial file at the
    /// destination. Error responses are read into memory instead, for the error and the
    /// delegate, within the request's body limit. Follow the transfer with
    /// ``Promise/onProgress(in:_:)`` or ``Promise/progressUpdates``.
    ///
    /// A download that stops early keeps its bytes when they can be resumed (see
    /// ``ResumableDownload``); a retry of the same request goes on from them too.
    ///
    /// ```swift
    /// let export = client.download(route: .get("/exports/2026.zip"), to: destination, replacing: true)
    /// for await progress in export.progressUpdates {   // on the main actor, as a screen's code runs
    ///     bar.progress = progress.fractionCompleted ?? 0
    /// }
    /// show(try await export.value.fileURL)
    /// ```
    ///
    /// - Parameters:
    ///   - route: The method and URL, such as `.get("/exports/2026.zip")`.
    ///   - parameters: Query items or a body, as for any request.
    ///   - destination: Where the file goes, in a directory that exists: one that does not
    ///     fails the download with ``APIError/FileFailure/Reason/writeFailed`` before it is sent.
    ///   - replacing: Whether a file already at `destination` is replaced; if not, the download
    ///     fails with ``APIError/FileFailure/Reason/destinationExists`` before it starts, or at
    ///     its end if another program made the file meanwhile.
    ///   - maximumSize: The largest file accepted. A larger one, announced or as it arrives,
    ///     stops the transfer and fails with ``APIError/responseTooLarge(_:)``, leaving nothing
    ///     on disk: set it when a server could send an endless body.
    ///   - resume: The bytes an earlier download left, to go on from.
    ///   - options: Settings for this request that override the API's.
    public func download(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        to destination: URL,
        replacing: Bool = false,
        maximumSize: SizeLimit = .unlimited,
        resumingFrom resume: ResumableDownload? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Promise<DownloadedFile> {
        guard destination.isFileURL else {
            return Promise(error: APIError.fileFailed(.init(reason: .notAFileURL, destination: destination)),
                           in: options.responseQueue ?? responseQueue)
        }
        guard replacing || !FileManager.default.fileExists(atPath: destination.path) else {
            return Promise(error: APIError.fileFailed(.init(reason: .destinationExists, destination: destination)),
                           in: options.responseQueue ?? responseQueue)
        }
        if let missing = MissingFolder.check(destination) {
            return Promise(error: missing, in: options.responseQueue ?? responseQueue)   // not sent: its answer would have nowhere to go
        }
        let file = DownloadFile(destination: destination, replacing: replacing, maximumSize: maximumSize, resumingFrom: resume)
        return perform(route: route, parameters: parameters, options: options, sink: .file(file),
                       decoding: ResponseDecoding { response, _ in try file.deliver(response) })
    }
}
