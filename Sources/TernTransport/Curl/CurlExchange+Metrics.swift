#if os(Linux)
import CTernCurl
import Foundation

extension CurlExchange {
    /// What libcurl measured of the transfer: so far, with no end, unless it `ended`.
    func metrics(ended: Bool = true) -> TransferMetrics {
        func seconds(_ info: Int32) -> TimeInterval? {
            var microseconds: Int64 = 0
            guard tern_curl_getinfo_offset(curl, easy, info, &microseconds) == 0 else { return nil }
            return TimeInterval(microseconds) / 1e6
        }
        func count(_ info: Int32) -> Int64 {
            var value: Int64 = 0
            tern_curl_getinfo_offset(curl, easy, info, &value)
            return value
        }
        var connections = 0
        let knowsConnections = tern_curl_getinfo_long(curl, easy, CurlInfo.newConnections, &connections) == 0
        var version = 0
        tern_curl_getinfo_long(curl, easy, CurlInfo.httpVersion, &version)
        let tls = url.scheme?.lowercased() == "https" ? seconds(CurlInfo.tlsHandshakeTime) : nil
        let head = response.head
        return TransferMetrics(
            url: url, statusCode: head.isComplete ? head.status : nil,
            nameLookup: seconds(CurlInfo.nameLookupTime), connect: seconds(CurlInfo.connectTime), tlsHandshake: tls,
            firstByte: seconds(CurlInfo.firstByteTime), total: ended ? seconds(CurlInfo.totalTime) : nil,
            bytesSent: upload.readBytes, bytesReceived: ended ? count(CurlInfo.downloadedBytes) : 0,
            reusedConnection: knowsConnections ? connections == 0 : nil,
            httpVersion: Self.httpVersionName(version)
        )
    }

    /// libcurl's `CURL_HTTP_VERSION_*` as a protocol's name.
    static func httpVersionName(_ version: Int) -> String? {
        switch version {
        case 1: "HTTP/1.0"
        case 2: "HTTP/1.1"
        case 3: "HTTP/2"
        case 30: "HTTP/3"
        default: nil
        }
    }
}
#endif
