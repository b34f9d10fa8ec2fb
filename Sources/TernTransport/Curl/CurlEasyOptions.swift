#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// Sets an exchange's easy handle up from its request: libcurl's options, the trust and the
/// pins, the method and header fields (``CurlRequestHead``), the body's length; and then the
/// callbacks (`CurlCallbacks.swift`). Once, on the sender's thread, before the loop takes the
/// exchange.
struct CurlEasyOptions {
    let curl: UnsafePointer<TernCurl>
    let easy: UnsafeMutableRawPointer

    /// What the handle keeps pointing at, and what the request asked of the response.
    struct Configured {
        /// The header fields' list, which libcurl reads until the handle is reset; the
        /// exchange frees it.
        let headerList: UnsafeMutableRawPointer?
        /// The request's own `Accept-Encoding`, if it named one.
        let requestedEncodings: String?
    }

    /// Sets every option `request` asks for but the callbacks; `overTLS` for an HTTPS URL,
    /// `upload` its body, `notes` where libcurl writes what went wrong (and the socket callback
    /// whether a descriptor was wanting), `certificates` the only ones to trust, if not the
    /// system's.
    func configure(_ request: TransportRequest, url: URL, overTLS: Bool, upload: CurlUpload,
                   notes: UnsafeMutablePointer<tern_exchange_notes>, trusting certificates: URL?) -> Configured {
        setLong(CurlOption.noSignal, 1)
        // A process the app starts (or a test, an exit test's child) inherits no connection:
        // one that did kept it open after libcurl closed it, until the child ended.
        tern_curl_setopt_sockets_closed_on_exec(curl, easy, CurlOption.openSocketFunction, CurlOption.openSocketData, notes)
        setLong(CurlOption.protocols, 3)            // CURLPROTO_HTTP | CURLPROTO_HTTPS: no file://, no ftp://
        setLong(CurlOption.tcpKeepAlive, 1)
        setLong(CurlOption.sslVerifyPeer, 1)        // libcurl's defaults, stated: the peer and its name are checked
        setLong(CurlOption.sslVerifyHost, 2)
        setString(CurlOption.url, url.absoluteString)
        // Requests sent together to an HTTPS origin wait to learn whether its first connection
        // speaks HTTP/2, and then share it, rather than each opening a connection of its own.
        if overTLS {
            setLong(CurlOption.pipeWait, 1)
        } else {
            // HTTP/1.1 and nothing else (as libcurl speaks plain HTTP anyway): a transfer that
            // wants only it never takes a connection another is using, even once an answer that
            // claimed HTTP/2 has made libcurl 7.88 take the server's connections for shared ones.
            setLong(CurlOption.httpVersion, CurlOption.http1_1)
        }
        // Tern undoes the body's encoding itself (ContentDecoder), so that a compressed stream
        // cut short is seen for what it is; libcurl hands the body as it came.
        setLong(CurlOption.httpContentDecoding, 0)
        // A proxy's answer to CONNECT is no head of the response: only the server's is.
        setLong(CurlOption.suppressConnectHeaders, 1)
        tern_curl_setopt_pointer(curl, easy, CurlOption.errorBuffer, UnsafeMutableRawPointer(notes))   // `error` comes first

        let sendsBody = upload.hasBody
        if sendsBody {
            setLong(CurlOption.post, 1)
            setLong(CurlOption.noProgress, 0)
            // Without a length libcurl sends the body chunked over HTTP/1.1, and as it is over
            // HTTP/2, which has no chunks.
            if let length = upload.length { tern_curl_setopt_offset(curl, easy, CurlOption.postFieldSize, length) }
        }
        switch CurlRequestHead.method(request.urlRequest.httpMethod ?? "GET", sendsBody: sendsBody) {
        case .implied: break
        case .noBody: setLong(CurlOption.noBody, 1)
        case .custom(let method): setString(CurlOption.customRequest, method)
        }
        var headerList: UnsafeMutableRawPointer?
        let requestedEncodings = CurlRequestHead.forEachField(of: request.urlRequest.allHTTPHeaderFields ?? [:], sendsBody: sendsBody) {
            append($0, $1, $2, to: &headerList)
        }
        if let headerList { tern_curl_setopt_pointer(curl, easy, CurlOption.httpHeader, headerList) }

        if request.usesNewConnection { setLong(CurlOption.freshConnect, 1) }
        let trust = certificates.map { CurlTrust.only(certificates: $0) } ?? .system
        for (option, value) in trust.options {
            if let value { setString(option, value) } else { tern_curl_setopt_pointer(curl, easy, option, nil) }
        }
        if !request.pinnedKeys.isEmpty {
            setString(CurlOption.pinnedPublicKey, request.pinnedKeys.map { "sha256//" + $0 }.joined(separator: ";"))
            setLong(CurlOption.certInfo, 1)   // so that a mismatch can say which key the server showed
        }
        return Configured(headerList: headerList, requestedEncodings: requestedEncodings)
    }

    /// Adds `name`, `separator` and `value` to `list` as one line, written on the stack: a line
    /// built as a `String` cost two allocations, and its C copy a third, for each field of
    /// every request (libcurl copies the line anyway).
    private func append(_ name: String, _ separator: StaticString, _ value: String, to list: inout UnsafeMutableRawPointer?) {
        var name = name, value = value
        name.withUTF8 { name in
            value.withUTF8 { value in
                let length = name.count + separator.utf8CodeUnitCount + value.count
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length + 1) { line in
                    var end = line.initialize(fromContentsOf: name)
                    end = line[end...].initialize(fromContentsOf: UnsafeBufferPointer(start: separator.utf8Start, count: separator.utf8CodeUnitCount))
                    end = line[end...].initialize(fromContentsOf: value)
                    line[end] = 0
                    list = line.withMemoryRebound(to: CChar.self) { curl.pointee.slist_append(list, $0.baseAddress) }
                }
            }
        }
    }

    func setLong(_ option: Int32, _ value: Int) {
        tern_curl_setopt_long(curl, easy, option, value)
    }

    /// libcurl copies strings it is given.
    func setString(_ option: Int32, _ value: String) {
        _ = value.withCString { tern_curl_setopt_pointer(curl, easy, option, $0) }
    }
}
#endif
