#if os(Linux)
import Foundation
import Glibc
import TernCore

/// TLS in front of one of the tests' plain servers, in the test process itself: each TLS
/// connection it accepts gets a plain connection of its own to the server, and the bytes go
/// between the two as they come. The system's OpenSSL (libssl, which libcurl links) does the
/// TLS, loaded at run time, so no headers are needed.
///
/// Unlike `openssl s_server`, it serves many connections at once, reads request bodies, and
/// starts no process: many `s_server`s started and stopped from the tests met Swift Testing's
/// exit-test monitor (which spins on a child's zombie it does not own) and Foundation's
/// `Process` crashing as it started one.
///
/// Each connection's thread moves one chunk at a time, writing it whole before it reads again:
/// a server that answers early and stops reading a body it does not want holds its connection
/// until the client stops sending, which none of the TLS tests' servers does.
final class TLSRelay: Sendable {
    /// Where it listens for TLS, on 127.0.0.1.
    let port: Int
    private let backendPort: Int
    private let listener: Int32
    private let context: OpenSSL.Context
    private let stopped = Locked(false)
    private let acceptLoopEnded = DispatchSemaphore(value: 0)

    /// TLS with `certificates`' server certificate (for 127.0.0.1), relayed to the plain server
    /// listening on 127.0.0.1:`backendPort`; `offeringHTTP2` says (with ALPN) that the server
    /// behind speaks HTTP/2.
    init(certificates: TestCertificates, to backendPort: Int, offeringHTTP2: Bool = false) throws {
        context = try OpenSSL.shared.get().serverContext(
            certificate: certificates.directory.appendingPathComponent("server.pem").path,
            key: certificates.directory.appendingPathComponent("server.key").path, offeringHTTP2: offeringHTTP2)
        let (listener, port) = try CurlConnectionsTests.listener()
        self.listener = listener
        self.port = Int(port)
        self.backendPort = backendPort
        let thread = Thread { [self] in
            acceptLoop()
            acceptLoopEnded.signal()
        }
        thread.name = "tern.test.tls"
        thread.start()
    }

    /// The relay's base URL: `https://127.0.0.1:port`.
    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Stops accepting; connections being relayed end as either side closes.
    func stop() {
        guard !stopped.withLock({ stopped in defer { stopped = true }; return stopped }) else { return }
        acceptLoopEnded.wait()
        close(listener)
    }

    deinit { stop() }

    private func acceptLoop() {
        while !stopped.withLock({ $0 }) {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let client = CloseOnExec.accept(listener)
            guard client >= 0 else { continue }
            let (context, backendPort) = (context, backendPort)
            let thread = Thread { Self.relay(client, context: context, to: backendPort) }
            thread.name = "tern.test.tls.connection"
            thread.start()
        }
    }

    /// Relays one connection until either side closes it or fails.
    private static func relay(_ client: Int32, context: OpenSSL.Context, to backendPort: Int) {
        // OpenSSL writes to a client that may have gone without MSG_NOSIGNAL: blocked on this
        // thread, the SIGPIPE of that write stays with it instead of ending the test process.
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)
        defer { close(client) }
        guard let backend = try? CurlConnectionsTests.socket(boundTo: 0) else { return }
        defer { close(backend) }
        guard (try? CurlConnectionsTests.connect(backend, to: Int32(backendPort))) != nil,
              let session = context.accept(client) else { return }
        defer { session.close() }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var descriptors = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: backend, events: Int16(POLLIN), revents: 0)]
        while true {
            // Bytes OpenSSL already decrypted are not the socket's to report.
            if !session.hasPending {
                descriptors[0].revents = 0
                descriptors[1].revents = 0
                guard poll(&descriptors, 2, -1) > 0 || errno == EINTR else { return }
            }
            if session.hasPending || descriptors[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { session.read(into: $0) }
                guard count > 0, buffer.withUnsafeBytes({ sendAll(backend, $0.prefix(count)) }) else { return }
            }
            if descriptors[1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(backend, $0.baseAddress, $0.count, 0) }
                guard count > 0, buffer.withUnsafeBytes({ session.write($0.prefix(count)) }) else { return }
                descriptors[1].revents = 0
            }
        }
    }

    private static func sendAll(_ socket: Int32, _ bytes: UnsafeRawBufferPointer.SubSequence) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = send(socket, bytes.base.baseAddress! + offset, bytes.endIndex - offset, Int32(MSG_NOSIGNAL))
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}

/// The few entry points of the system's libssl a TLS server needs, looked up at run time.
struct OpenSSL: Sendable {
    private typealias Method = @convention(c) () -> OpaquePointer?
    private typealias NewContext = @convention(c) (OpaquePointer?) -> OpaquePointer?
    private typealias UseFile = @convention(c) (OpaquePointer?, UnsafePointer<CChar>) -> Int32
    private typealias UseTypedFile = @convention(c) (OpaquePointer?, UnsafePointer<CChar>, Int32) -> Int32
    private typealias NewSession = @convention(c) (OpaquePointer?) -> OpaquePointer?
    private typealias SetDescriptor = @convention(c) (OpaquePointer?, Int32) -> Int32
    private typealias OnSession = @convention(c) (OpaquePointer?) -> Int32
    private typealias Free = @convention(c) (OpaquePointer?) -> Void
    private typealias Transfer = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    private typealias SetALPNChoice = @convention(c) (OpaquePointer?, ALPNChoice, UnsafeMutableRawPointer?) -> Void
    fileprivate typealias ALPNChoice = @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32

    private let serverMethod: Method
    private let newContext: NewContext
    private let useCertificateChain: UseFile
    private let usePrivateKey: UseTypedFile
    private let newSession: NewSession
    private let setDescriptor: SetDescriptor
    private let acceptSession: OnSession
    private let pending: OnSession
    private let shutdown: OnSession
    private let freeSession: Free
    private let read: Transfer
    private let write: Transfer
    private let setALPNChoice: SetALPNChoice

    struct Unavailable: Error {
        let symbol: String
    }

    static let shared: Result<OpenSSL, Unavailable> = Result { try OpenSSL() }.mapError { $0 as? Unavailable ?? Unavailable(symbol: "\($0)") }

    private init() throws {
        guard let library = dlopen("libssl.so.3", RTLD_NOW) ?? dlopen("libssl.so", RTLD_NOW) else { throw Unavailable(symbol: "libssl") }
        func load<Function>(_ name: String, as type: Function.Type) throws -> Function {
            guard let symbol = dlsym(library, name) else { throw Unavailable(symbol: name) }
            return unsafeBitCast(symbol, to: type)
        }
        serverMethod = try load("TLS_server_method", as: Method.self)
        newContext = try load("SSL_CTX_new", as: NewContext.self)
        useCertificateChain = try load("SSL_CTX_use_certificate_chain_file", as: UseFile.self)
        usePrivateKey = try load("SSL_CTX_use_PrivateKey_file", as: UseTypedFile.self)
        newSession = try load("SSL_new", as: NewSession.self)
        setDescriptor = try load("SSL_set_fd", as: SetDescriptor.self)
        acceptSession = try load("SSL_accept", as: OnSession.self)
        pending = try load("SSL_pending", as: OnSession.self)
        shutdown = try load("SSL_shutdown", as: OnSession.self)
        freeSession = try load("SSL_free", as: Free.self)
        read = try load("SSL_read", as: Transfer.self)
        write = try load("SSL_write", as: Transfer.self)
        setALPNChoice = try load("SSL_CTX_set_alpn_select_cb", as: SetALPNChoice.self)
    }

    /// A server's settings: its certificate chain and key, from PEM files. Kept for the
    /// process's life (a test makes a few).
    func serverContext(certificate: String, key: String, offeringHTTP2: Bool) throws -> Context {
        guard let context = newContext(serverMethod()), useCertificateChain(context, certificate) == 1,
              usePrivateKey(context, key, 1) == 1 else { throw Unavailable(symbol: "a server context for \(certificate)") }   // SSL_FILETYPE_PEM
        if offeringHTTP2 { setALPNChoice(context, choosingHTTP2, nil) }
        return Context(library: self, context: Pointer(raw: context))
    }

    /// An OpenSSL object, used by one thread at a time.
    struct Pointer: @unchecked Sendable {
        let raw: OpaquePointer
    }

    struct Context: Sendable {
        fileprivate let library: OpenSSL
        fileprivate let context: Pointer

        /// The TLS session of a connection accepted on `socket`, once its handshake is done.
        func accept(_ socket: Int32) -> Session? {
            guard let session = library.newSession(context.raw) else { return nil }
            let made = Session(library: library, session: Pointer(raw: session))
            guard library.setDescriptor(session, socket) == 1, library.acceptSession(session) == 1 else {
                library.freeSession(session)
                return nil
            }
            return made
        }
    }

    struct Session {
        fileprivate let library: OpenSSL
        fileprivate let session: Pointer

        var hasPending: Bool { library.pending(session.raw) > 0 }

        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
            Int(library.read(session.raw, buffer.baseAddress, Int32(buffer.count)))
        }

        func write(_ bytes: UnsafeRawBufferPointer.SubSequence) -> Bool {
            let bytes = UnsafeRawBufferPointer(rebasing: bytes)
            return library.write(session.raw, UnsafeMutableRawPointer(mutating: bytes.baseAddress), Int32(bytes.count)) == Int32(bytes.count)
        }

        /// Sends TLS's `close_notify`, leaving the TCP connection open (and the session to
        /// `close()`).
        func sendCloseNotify() -> Bool {
            library.shutdown(session.raw) >= 0
        }

        func close() {
            _ = library.shutdown(session.raw)
            library.freeSession(session.raw)
        }
    }
}
/// Chooses `h2` when the client offers it (ALPN, RFC 7301); otherwise nothing, which leaves
/// the client speaking HTTP/1.1.
private let choosingHTTP2: OpenSSL.ALPNChoice = { _, chosen, chosenLength, offered, offeredLength, _ in
    guard let offered else { return 3 }   // SSL_TLSEXT_ERR_NOACK
    var index = 0
    // A list of names, each after its length in one byte.
    while index < Int(offeredLength) {
        let length = Int(offered[index])
        if length == 2, index + 2 < Int(offeredLength), offered[index + 1] == UInt8(ascii: "h"), offered[index + 2] == UInt8(ascii: "2") {
            chosen?.pointee = offered + index + 1
            chosenLength?.pointee = 2
            return 0   // SSL_TLSEXT_ERR_OK
        }
        index += 1 + length
    }
    return 3
}
#endif
