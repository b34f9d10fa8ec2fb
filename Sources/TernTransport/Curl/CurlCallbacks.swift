#if os(Linux)
import CTernCurl

extension CurlEasyOptions {
    /// Hands libcurl the exchange's callbacks, with `context` (the exchange, unretained: the
    /// loop holds it while libcurl may call) as theirs; the read and seek ones when it
    /// `sendsBody`.
    func setCallbacks(context: UnsafeMutableRawPointer, sendsBody: Bool) {
        tern_curl_setopt_pointer(curl, easy, CurlOption.writeData, context)
        tern_curl_setopt_pointer(curl, easy, CurlOption.headerData, context)
        tern_curl_setopt_data_callback(curl, easy, CurlOption.writeFunction, curlWrite)
        tern_curl_setopt_data_callback(curl, easy, CurlOption.headerFunction, curlHeader)
        // Called only once verbose, which a chunked body turns on (see watchChunks()).
        tern_curl_setopt_pointer(curl, easy, CurlOption.debugData, context)
        tern_curl_setopt_debug_callback(curl, easy, CurlOption.debugFunction, curlDebug)
        tern_curl_setopt_pointer(curl, easy, CurlOption.progressData, context)
        tern_curl_setopt_progress_callback(curl, easy, CurlOption.progressFunction, curlProgress)
        if tern_curl_setopt_prereq_callback(curl, easy, CurlOption.prereqFunction, curlPrereq) == 0 {
            tern_curl_setopt_pointer(curl, easy, CurlOption.prereqData, context)
        } else {
            // A libcurl older than 7.80 cannot say which connection a request goes on before it
            // is written: reusing none, idle or carrying another, is the one way to never read a
            // stray answer or another's there.
            setLong(CurlOption.forbidReuse, 1)
            setLong(CurlOption.freshConnect, 1)
        }
        guard sendsBody else { return }
        tern_curl_setopt_pointer(curl, easy, CurlOption.readData, context)
        tern_curl_setopt_data_callback(curl, easy, CurlOption.readFunction, curlRead)
        tern_curl_setopt_pointer(curl, easy, CurlOption.seekData, context)
        tern_curl_setopt_seek_callback(curl, easy, CurlOption.seekFunction, curlSeek)
    }
}

// libcurl's callbacks: C functions, handed the exchange as their context, on the loop's thread.

private let curlWrite: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    return exchange.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count)).returned(forBytes: size * count)
}

private let curlHeader: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    return exchange.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count)).returned(forBytes: size * count)
}

extension CurlExchange.Written {
    /// What a write or header callback returns to libcurl for `bytes` handed to it.
    func returned(forBytes bytes: Int) -> Int {
        switch self {
        case .taken: bytes
        case .abort: 0
        case .pause: 0x1000_0001   // CURL_WRITEFUNC_PAUSE
        }
    }
}

private let curlRead: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0x1000_0000 }   // CURL_READFUNC_ABORT
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    switch exchange.readBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count)) {
    case .bytes(let count): return count
    case .pause: return 0x1000_0001   // CURL_READFUNC_PAUSE
    case .abort: return 0x1000_0000   // CURL_READFUNC_ABORT
    }
}

private let curlSeek: tern_curl_seek_callback = { context, offset, origin in
    guard let context else { return 2 }   // CURL_SEEKFUNC_CANTSEEK
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().rewindBody(to: offset, from: origin).rawValue
}

private let curlPrereq: tern_curl_prereq_callback = { context, peerAddress, _, peerPort, localPort in
    guard let context, let peerAddress else { return 1 }   // CURL_PREREQFUNC_ABORT
    let ends = CurlConnections.Ends(localPort: localPort, peerAddress: String(cString: peerAddress), peerPort: peerPort)
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().connectionChosen(ends) ? 0 : 1
}

private let curlProgress: tern_curl_progress_callback = { context, _, _, _, uploaded in
    guard let context else { return 0 }
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().progress(uploaded: uploaded) ? 0 : 1
}

private let curlDebug: tern_curl_debug_callback = { _, kind, buffer, count, context in
    guard kind == 3, let context, let buffer else { return 0 }   // CURLINFO_DATA_IN: raw body bytes
    Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().receiveRaw(UnsafeRawBufferPointer(start: buffer, count: count))
    return 0
}
#endif
