import Foundation

/// One part of a ``MultipartParameters`` body: a form field or a file.
///
/// ```swift
/// Part(name: "caption", value: "front")
/// Part(name: "thumbnail", data: pngData, filename: "thumb.png", mimeType: "image/png")
/// Part(name: "picture", fileURL: pictureURL)            // streamed from disk, type from ".png"
/// ```
public struct Part: Sendable {
    /// Where the part's bytes come from.
    package enum Content: Sendable, Equatable {
        /// Bytes in memory.
        case data(Data)
        /// A file, read from disk while the body is written, never whole into memory.
        case file(URL)
    }

    /// The form field's name.
    package var name: String
    /// The file name sent to the server, if any.
    package var filename: String?
    /// The part's `Content-Type`, if any.
    package var mimeType: MIMEType?
    /// The bytes.
    package var content: Content
    /// More headers for this part.
    package var headers: HTTPHeaders

    /// A text field: no file name, no content type.
    public init(name: String, value: String, headers: HTTPHeaders = [:]) {
        self.init(name: name, content: .data(Data(value.utf8)), filename: nil, mimeType: nil, headers: headers)
    }

    /// Bytes in memory, sent as a file when `filename` is given.
    public init(name: String, data: Data, filename: String? = nil, mimeType: String? = nil, headers: HTTPHeaders = [:]) {
        self.init(name: name, content: .data(data), filename: filename,
                  mimeType: mimeType.map(MIMEType.init(rawValue:)) ?? (filename == nil ? nil : .octetStream), headers: headers)
    }

    /// A file on disk, streamed while the body is written. The file name defaults to the URL's
    /// last component and the content type to the usual one for its extension.
    public init(name: String, fileURL: URL, filename: String? = nil, mimeType: String? = nil, headers: HTTPHeaders = [:]) {
        self.init(name: name, content: .file(fileURL), filename: filename ?? fileURL.lastPathComponent,
                  mimeType: mimeType.map(MIMEType.init(rawValue:)) ?? MIMEType(fileExtension: fileURL.pathExtension), headers: headers)
    }

    /// A part with every detail given.
    package init(name: String, content: Content, filename: String?, mimeType: MIMEType?, headers: HTTPHeaders = [:]) {
        self.name = name
        self.content = content
        self.filename = filename
        self.mimeType = mimeType
        self.headers = headers
    }
}
