/// A media type, such as `image/png`, with constants for common ones and a guess from a file
/// extension.
public struct MIMEType: WireName {
    /// The media type as sent in `Content-Type`.
    public let rawValue: String

    /// Creates a media type from its name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `application/octet-stream`: bytes of no particular type.
    public static let octetStream: MIMEType = "application/octet-stream"
    /// `application/json`
    public static let json: MIMEType = "application/json"
    /// `application/pdf`
    public static let pdf: MIMEType = "application/pdf"
    /// `application/zip`
    public static let zip: MIMEType = "application/zip"
    /// `application/xml`
    public static let xml: MIMEType = "application/xml"
    /// `text/plain; charset=utf-8`
    public static let text: MIMEType = "text/plain; charset=utf-8"
    /// `text/html; charset=utf-8`
    public static let html: MIMEType = "text/html; charset=utf-8"
    /// `text/csv; charset=utf-8`
    public static let csv: MIMEType = "text/csv; charset=utf-8"
    /// `image/png`
    public static let png: MIMEType = "image/png"
    /// `image/jpeg`
    public static let jpeg: MIMEType = "image/jpeg"
    /// `image/gif`
    public static let gif: MIMEType = "image/gif"
    /// `image/webp`
    public static let webp: MIMEType = "image/webp"
    /// `image/heic`
    public static let heic: MIMEType = "image/heic"
    /// `image/svg+xml`
    public static let svg: MIMEType = "image/svg+xml"
    /// `video/mp4`
    public static let mp4: MIMEType = "video/mp4"
    /// `video/quicktime`
    public static let mov: MIMEType = "video/quicktime"
    /// `audio/mpeg`
    public static let mp3: MIMEType = "audio/mpeg"

    private static let byExtension: [String: MIMEType] = [
        "json": .json, "pdf": .pdf, "zip": .zip, "xml": .xml,
        "txt": .text, "text": .text, "html": .html, "htm": .html, "csv": .csv,
        "png": .png, "jpg": .jpeg, "jpeg": .jpeg, "gif": .gif, "webp": .webp, "heic": .heic, "svg": .svg,
        "mp4": .mp4, "m4v": .mp4, "mov": .mov, "mp3": .mp3,
    ]

    /// The media type usual for a file extension (`"png"`, `"JPG"`), or ``octetStream``.
    public init(fileExtension: String) {
        self = Self.byExtension[fileExtension.lowercased()] ?? .octetStream
    }
}
