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
        let total = ended ? seconds(CurlInfo.totalTime) : nil
        return TransferMetrics(
            url: url, statusCode: head.isComplete ? head.status : nil,
            nameLookup: seconds(CurlInfo.nameLookupTime), connect: seconds(CurlInfo.connectTime), tlsHandshake: tls,
            firstByte: answersFirstByte(libcurl: seconds(CurlInfo.firstByteTime), total: total),
            total: total,
            bytesSent: upload.readBytes, bytesReceived: ended ? count(CurlInfo.downloadedBytes) : 0,
            reusedConnection: knowsConnections ? connections == 0 : nil,
            httpVersion: Self.httpVersionName(version)
        )
    }

    /// Notes that libcurl is handed the exchange (again, when it runs again): the origin of its
    /// times. Only a request with a body needs the note (see ``answersFirstByte(libcurl:total:)``).
    func noteHandedOver() {
        guard upload.hasBody else { return }
        owned.value.handedOver = DispatchTime.now().uptimeNanoseconds
        owned.value.answerBegan = nil
    }

    /// Notes the answer's first line, once per run, for a request with a body.
    func noteAnswerBegan() {
        if upload.hasBody, owned.value.answerBegan == nil { owned.value.answerBegan = DispatchTime.now().uptimeNanoseconds }
    }

    /// When the answer's first byte came. libcurl 7.88 starts that clock as a body from the read
    /// callback starts going out, so a POST whose server took a second to answer said it answered
    /// in microseconds; for such a request Tern's own note of the answer's first line is taken,
    /// counted from when libcurl was handed the exchange (a little before libcurl's own origin,
    /// hence kept within the total).
    func answersFirstByte(libcurl: TimeInterval?, total: TimeInterval?) -> TimeInterval? {
        guard upload.readBytes > 0, let began = owned.value.answerBegan else { return libcurl }
        let own = TimeInterval(began &- owned.value.handedOver) / 1e9
        return min(max(own, libcurl ?? 0), total ?? .infinity)
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
