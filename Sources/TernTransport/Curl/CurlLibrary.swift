#if os(Linux)
import CTernCurl
import Foundation

/// libcurl, opened once per process at run time: neither its headers nor a `-dev` package are
/// needed to build Tern, and a system without it still runs Tern over URLSession.
final class CurlLibrary: @unchecked Sendable {   // unchecked: C function pointers, written once before it is shared
    /// Its entry points; immutable once loaded, and never freed.
    let api: UnsafePointer<TernCurl>
    /// Its version string, such as "libcurl/7.88.1 OpenSSL/3.0.19 zlib/1.2.13 nghttp2/1.52.0".
    let version: String
    /// Whether a handle `curl_easy_reset` after a transfer is as safe for the next one as a new
    /// handle. libcurl before 8.1.0 left on the handle a pointer to its last transfer's
    /// headers, freed as the next began; a response whose first field line was folded (began
    /// with a space) was then appended through it: a use after free, which a hostile server
    /// could send at will (seen: "free(): invalid pointer", the process aborted). Fixed by
    /// curl's "headers: clear (possibly) lingering pointer in init".
    let resetHandlesAreSafe: Bool

    /// The library loaded unless `TERN_LIBCURL` names another: the one FoundationNetworking links.
    static let defaultPath = "libcurl.so.4"

    /// The process's libcurl, or why there is none: the one `TERN_LIBCURL` names, if set (a path
    /// or a soname), else ``defaultPath``.
    static let shared: Result<CurlLibrary, CurlUnavailable> = {
        do throws(CurlUnavailable) {
            let named = ProcessInfo.processInfo.environment["TERN_LIBCURL"] ?? ""
            return .success(try CurlLibrary(path: named.isEmpty ? defaultPath : named))
        } catch {
            return .failure(error)
        }
    }()

    private init(path: String) throws(CurlUnavailable) {
        let api = UnsafeMutablePointer<TernCurl>.allocate(capacity: 1)
        api.initialize(to: TernCurl())
        var failure: UnsafePointer<CChar>?
        switch tern_curl_load(api, path, &failure) {
        case 0:
            break
        case let code:
            api.deallocate()
            let detail = failure.map { String(cString: $0) }
            throw CurlUnavailable(reason: code == -2 ? "\(path) has no \(detail ?? "entry point Tern needs")" : detail ?? "\(path) could not be opened")
        }
        // CURL_GLOBAL_ALL; once, before any other thread uses libcurl (Swift runs `static let` once).
        guard api.pointee.global_init(3) == 0 else { throw CurlUnavailable(reason: "curl_global_init failed") }
        tern_curl_wait_at_exit()
        self.api = UnsafePointer(api)
        version = api.pointee.version().map { String(cString: $0) } ?? "libcurl"
        resetHandlesAreSafe = Self.release(of: version).map { !$0.lexicographicallyPrecedes([8, 1, 0]) } ?? false
    }

    /// Runs `work`, which calls libcurl and through it maybe OpenSSL: the process's exit waits
    /// for it to end (two seconds at most). An OpenSSL that registered its exit handler before
    /// libcurl was first used (by URLSession, say) frees its state as the process exits, under
    /// a loop still in a TLS handshake: exits with HTTPS requests under way crashed.
    /// Not around a loop's wait for its sockets, which calls no OpenSSL, so that exit need not
    /// wait for it to wake.
    @inline(__always)
    static func exitWaits<Result>(for work: () throws -> Result) rethrows -> Result {
        tern_curl_enter()
        defer { tern_curl_leave() }
        return try work()
    }

    /// The release a version string names, such as [7, 88, 1] for "libcurl/7.88.1 OpenSSL/3.0";
    /// `nil` if it names none.
    static func release(of version: String) -> [Int]? {
        guard version.hasPrefix("libcurl/") else { return nil }
        let numbers = version.dropFirst("libcurl/".count).prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
        guard numbers.count == 3 else { return nil }
        return numbers
    }
}

/// Why a ``CurlTransport`` could not be made: libcurl is missing or lacks an entry point Tern
/// needs, or the file of certificate authorities it was told to trust holds none.
public struct CurlUnavailable: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in words.
    public let description: String

    /// libcurl could not be used; `reason` is what failed, as the dynamic loader said it.
    package init(reason: String) {
        description = "libcurl is not available: \(reason)"
    }

    /// The authorities in `file` cannot be trusted: every request would fail on them.
    package init(trusting file: URL, _ reason: String) {
        description = "CurlTransport cannot trust the authorities in \(file.path): \(reason)"
    }
}

/// The libcurl option, info and code numbers Tern uses: libcurl's stable ABI, as its
/// `curl.h` defines them (`CURLOPTTYPE_*` bases plus each option's number).
enum CurlOption {
    static let writeData: Int32 = 10_001
    static let url: Int32 = 10_002
    static let readData: Int32 = 10_009
    static let errorBuffer: Int32 = 10_010
    static let writeFunction: Int32 = 20_011
    static let readFunction: Int32 = 20_012
    static let seekFunction: Int32 = 20_167
    static let seekData: Int32 = 10_168
    static let httpHeader: Int32 = 10_023
    static let headerData: Int32 = 10_029
    static let customRequest: Int32 = 10_036
    static let noProgress: Int32 = 43
    static let noBody: Int32 = 44
    static let post: Int32 = 47
    static let progressData: Int32 = 10_057
    static let sslVerifyPeer: Int32 = 64
    static let caInfo: Int32 = 10_065
    static let headerFunction: Int32 = 20_079
    static let sslVerifyHost: Int32 = 81
    static let noSignal: Int32 = 99
    static let httpContentDecoding: Int32 = 158
    static let postFieldSize: Int32 = 30_120
    static let protocols: Int32 = 181
    static let progressFunction: Int32 = 20_219
    static let tcpKeepAlive: Int32 = 213
    static let pipeWait: Int32 = 237
    static let freshConnect: Int32 = 74
    static let forbidReuse: Int32 = 75
    static let caPath: Int32 = 10_097
    static let pinnedPublicKey: Int32 = 10_230
    static let certInfo: Int32 = 172
    static let openSocketFunction: Int32 = 20_163
    static let openSocketData: Int32 = 10_164
    static let prereqFunction: Int32 = 20_312
    static let prereqData: Int32 = 10_313
    static let suppressConnectHeaders: Int32 = 265
    static let verbose: Int32 = 41
    static let debugFunction: Int32 = 20_094
    static let debugData: Int32 = 10_095
    static let httpVersion: Int32 = 84
    /// `CURL_HTTP_VERSION_1_1`, a value of ``httpVersion``.
    static let http1_1 = 2
}

/// `CURLINFO_*` numbers.
enum CurlInfo {
    /// `CURLINFO_SIZE_UPLOAD_T`: body bytes sent.
    static let uploadedBytes: Int32 = 0x600000 + 7
    static let downloadedBytes: Int32 = 0x600000 + 8
    static let totalTime: Int32 = 0x600000 + 50
    static let nameLookupTime: Int32 = 0x600000 + 51
    static let connectTime: Int32 = 0x600000 + 52
    static let firstByteTime: Int32 = 0x600000 + 54
    static let tlsHandshakeTime: Int32 = 0x600000 + 56
    static let newConnections: Int32 = 0x200000 + 26
    /// `CURLINFO_PRIMARY_IP`: the address of the peer of the transfer's connection.
    static let primaryAddress: Int32 = 0x100000 + 32
    /// `CURLINFO_PRIMARY_PORT`: the port of that peer.
    static let primaryPort: Int32 = 0x200000 + 40
    /// `CURLINFO_LOCAL_PORT`: the local port of the transfer's connection.
    static let localPort: Int32 = 0x200000 + 42
    /// `CURLINFO_ACTIVESOCKET`: the socket of the transfer's connection, while it is open.
    static let activeSocket: Int32 = 0x500000 + 44
    /// `CURLINFO_HTTP_VERSION`: the HTTP version the transfer spoke.
    static let httpVersion: Int32 = 0x200000 + 46
}

/// `CURLMOPT_*` numbers.
enum CurlMultiOption {
    static let maxConnects: Int32 = 6
    static let maxHostConnections: Int32 = 7
    static let maxTotalConnections: Int32 = 13
}

/// `curl_easy_pause` bitmasks: which directions stay paused.
enum CurlPause {
    /// `CURLPAUSE_CONT`: neither.
    static let none: Int32 = 0
    /// `CURLPAUSE_RECV`.
    static let receive: Int32 = 1
    /// `CURLPAUSE_SEND`.
    static let send: Int32 = 4
}
#endif
