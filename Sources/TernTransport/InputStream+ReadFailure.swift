import Foundation

extension InputStream {
    /// Why a read of this stream returned -1. Its `streamError`, when it has one; a stream read
    /// after it was closed (a body's factory that hands back the same stream for a redirect's
    /// second leg) has none, and on Linux asking for it then stops the process.
    package var readFailure: any Error {
        guard streamStatus == .error, let error = streamError else { return ClosedBodyStream() }
        return error
    }
}

/// A body stream that could not be read, with no error of its own: it was closed, or never opened
/// where it had to be.
package struct ClosedBodyStream: Error, CustomStringConvertible {
    package init() {}

    package var description: String {
        "the body stream was closed before it was read: a BodyParameters' makeStream must make a new stream "
            + "each time it is called (a redirect or a retry sends the body again)"
    }
}
