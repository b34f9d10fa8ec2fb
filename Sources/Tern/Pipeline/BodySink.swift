/// Where a request's accepted body goes: one place, chosen when the request is made. A body the
/// pipeline does not accept (a redirect's, an error's) goes to memory whatever the sink, to be
/// read by validation and the error.
@usableFromInline
enum BodySink: Sendable {
    /// Into memory, under the request's limit: what the parser reads.
    case memory
    /// Into a download's file, chunk by chunk, resumed where it can be.
    case file(DownloadFile)
    /// Into a stream its reader takes as it comes; the request settles once the head is accepted.
    case stream(StreamBuffer)

    /// The download's file, for a download.
    var file: DownloadFile? {
        if case .file(let file) = self { file } else { nil }
    }

    /// The stream, for a streamed request.
    var stream: StreamBuffer? {
        if case .stream(let stream) = self { stream } else { nil }
    }
}
