/// A media type, such as `image/png`: the usual one for a file extension, and the constants the
/// package sends. Users name theirs as strings (`"image/webp"`), as they appear on the wire.
package struct MIMEType: WireName {
    /// The media type as sent in `Content-Type`.
    package let rawValue: String

    /// Creates a media type from its name.
    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `application/octet-stream`: bytes of no particular type.
    package static let octetStream: MIMEType = "application/octet-stream"
    /// `application/json`
    package static let json: MIMEType = "application/json"
    /// `application/pdf`
    package static let pdf: MIMEType = "application/pdf"
    /// `application/zip`
    package static let zip: MIMEType = "application/zip"
    /// `application/xml`
    package static let xml: MIMEType = "application/xml"
    /// `text/plain; charset=utf-8`
    package static let text: MIMEType = "text/plain; charset=utf-8"
    /// `text/html; charset=utf-8`
    package static let html: MIMEType = "text/html; charset=utf-8"
    /// `image/png`
    package static let png: MIMEType = "image/png"
    /// `image/jpeg`
    package static let jpeg: MIMEType = "image/jpeg"

    // Constants for the types an API names most; the rest by name here, and as string literals
    // in a user's code (`"image/webp"`).
    private static let byExtension: [String: MIMEType] = [
        "json": .json, "pdf": .pdf, "zip": .zip, "xml": .xml,
        "txt": .text, "text": .text, "html": .html, "htm": .html, "csv": "text/csv; charset=utf-8",
        "png": .png, "jpg": .jpeg, "jpeg": .jpeg, "gif": "image/gif", "webp": "image/webp", "heic": "image/heic",
        "svg": "image/svg+xml", "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "mp3": "audio/mpeg",
        "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar", "wasm": "application/wasm",
    ]

    /// The media type usual for a file extension (`"png"`, `"JPG"`), or ``octetStream``.
    package init(fileExtension: String) {
        self = Self.byExtension[fileExtension.lowercased()] ?? .octetStream
    }
}
