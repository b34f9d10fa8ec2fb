import Foundation
import Testing
import Tern
@testable import TernTesting

/// A large request body is digested a piece at a time as it is read, so that an upload is
/// never held whole: however the body is cut into pieces, the digest and the comparable bytes
/// are those of the whole.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ComparableBodyTests {
    /// FIPS 180-4's million `a`s, fed in pieces that end inside, at and past a block's end.
    @Test(arguments: [1, 63, 64, 65, 4_099, 1_000_000])
    func theDigestFedInPiecesIsTheWholesDigest(pieceSize: Int) {
        let whole = Data(repeating: 0x61, count: 1_000_000)
        var digest = SHA256Digest()
        for start in stride(from: 0, to: whole.count, by: pieceSize) {
            digest.update(whole[start..<min(start + pieceSize, whole.count)])
        }
        #expect(digest.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    static let boundary = "tern.boundary.7f3a"
    /// A form whose JSON part's members are out of order, a boundary-like text in a file part.
    static let form = Data("""
        --\(boundary)\r
        Content-Disposition: form-data; name="metadata"\r
        Content-Type: application/json\r
        \r
        {"version":"1.0.0","name":"tern"}\r
        --\(boundary)\r
        Content-Disposition: form-data; name="file"; filename="a.txt"\r
        Content-Type: text/plain\r
        \r
        --tern.boundary.7f3 is not the boundary; --BOUNDARY is text\r
        --\(boundary)--\r

        """.utf8)

    /// The boundary gone, the JSON part's members in order of name; the other part as sent.
    @Test func theWholeFormsComparableBytes() {
        let forms = ComparableBody.of(Self.form, contentType: "multipart/form-data; boundary=\(Self.boundary)")
        let unordered = String(decoding: forms.unordered, as: UTF8.self)
        #expect(!unordered.contains(Self.boundary))
        #expect(unordered.hasPrefix("--BOUNDARY\r\n") && unordered.hasSuffix("--BOUNDARY--\r\n"))
        #expect(unordered.contains(#"{"version":"1.0.0","name":"tern"}"#))
        let ordered = String(decoding: forms.ordered, as: UTF8.self)
        #expect(ordered.contains(#"{"name":"tern","version":"1.0.0"}"#))
        #expect(ordered.contains("--tern.boundary.7f3 is not the boundary; --BOUNDARY is text\r\n"))
        #expect(ordered.replacingOccurrences(of: #"{"name":"tern","version":"1.0.0"}"#, with: #"{"version":"1.0.0","name":"tern"}"#) == unordered)
    }

    /// Cut anywhere, through the boundary, the part heads and the JSON, the form comes out as
    /// it does whole.
    @Test func aFormCutIntoPiecesComesOutAsWhole() {
        let contentType = "multipart/form-data; boundary=\"\(Self.boundary)\""
        let whole = ComparableBody.of(Self.form, contentType: contentType)
        for pieceSize in 1...48 {
            var comparable = ComparableBody(contentType: contentType)
            var (ordered, unordered) = (Data(), Data())
            for start in stride(from: 0, to: Self.form.count, by: pieceSize) {
                let forms = comparable.take(Self.form[start..<min(start + pieceSize, Self.form.count)])
                ordered += forms.ordered
                unordered += forms.unordered
            }
            let last = comparable.end()
            #expect(ordered + last.ordered == whole.ordered, "cut every \(pieceSize) bytes")
            #expect(unordered + last.unordered == whole.unordered, "cut every \(pieceSize) bytes")
        }
    }

    /// A body that is not multipart is compared as it is.
    @Test func aBodyThatIsNotMultipartIsComparedAsItIs() {
        let body = Data(#"{"b": 1, "a": 2}"#.utf8)
        let forms = ComparableBody.of(body, contentType: "application/json")
        #expect(forms.ordered == body && forms.unordered == body)
    }
}
