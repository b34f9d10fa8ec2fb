import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// A request's body as a recording keeps and compares it, read a piece at a time so that a
/// large upload is never held whole: the body itself up to
/// ``HTTPArchive/largestKeptRequestBody``, past that only its start; its length; and the
/// digests of its comparable bytes.
struct SentBody {
    /// The whole body, or its start when it is longer than a recording keeps.
    let kept: Data
    let count: Int
    /// The SHA-256 of the body's comparable bytes, a multipart body's JSON parts in order
    /// and as sent (see ``ComparableBody``).
    let digests: (ordered: String, unordered: String)

    /// Whether ``kept`` is the whole body.
    var isWhole: Bool { kept.count == count }

    /// Reads `request`'s body from memory, its file or its stream.
    init(of request: TransportRequest) throws {
        var comparable = ComparableBody(contentType: request.urlRequest.value(forHTTPHeaderField: "Content-Type") ?? "")
        var ordered = SHA256Digest(), unordered = SHA256Digest()
        var kept = Data(), count = 0
        try StubTransport.eachPiece(ofBodyOf: request) { piece in
            if kept.count <= HTTPArchive.largestKeptRequestBody { kept += piece.prefix(HTTPArchive.largestKeptRequestBody + 1 - kept.count) }
            count += piece.count
            let forms = comparable.take(piece)
            ordered.update(forms.ordered)
            if comparable.hasTwoForms { unordered.update(forms.unordered) }
        }
        let forms = comparable.end()
        ordered.update(forms.ordered)
        unordered.update(forms.unordered)
        self.kept = count > HTTPArchive.largestKeptRequestBody ? kept.prefix(HTTPArchive.largestKeptRequestBody) : kept
        self.count = count
        self.digests = (ordered.hex(), comparable.hasTwoForms ? unordered.hex() : ordered.hex())
    }
}
