#if os(Linux)
import Foundation

/// Brotli and zstd bodies made in the tests, by the encoders of the libraries libcurl links
/// (loaded at run time); `nil` where a library is missing.
enum Compressors {
    /// `data` in brotli, at its best quality.
    static func brotli(_ data: Data) -> Data? {
        guard let library = dlopen("libbrotlienc.so.1", RTLD_NOW | RTLD_LOCAL),
              let symbol = dlsym(library, "BrotliEncoderCompress") else { return nil }
        typealias Compress = @convention(c) (Int32, Int32, Int32, Int, UnsafePointer<UInt8>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UInt8>?) -> Int32
        let compress = unsafeBitCast(symbol, to: Compress.self)
        var output = [UInt8](repeating: 0, count: data.count + 1_024)
        var length = output.count
        let done = data.withUnsafeBytes { input in
            compress(11, 22, 0, input.count, input.bindMemory(to: UInt8.self).baseAddress, &length, &output)
        }
        return done == 1 ? Data(output.prefix(length)) : nil
    }

    /// `data` as one zstd frame, with its checksum; `windowLog` asks for a window of that many
    /// bits rather than the level's own.
    static func zstd(_ data: Data, windowLog: Int32? = nil) -> Data? {
        guard let library = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL),
              let create = dlsym(library, "ZSTD_createCCtx"), let set = dlsym(library, "ZSTD_CCtx_setParameter"),
              let compress = dlsym(library, "ZSTD_compress2"), let isError = dlsym(library, "ZSTD_isError"),
              let free = dlsym(library, "ZSTD_freeCCtx") else { return nil }
        let context = unsafeBitCast(create, to: (@convention(c) () -> OpaquePointer?).self)()
        defer { _ = unsafeBitCast(free, to: (@convention(c) (OpaquePointer?) -> Int).self)(context) }
        let setParameter = unsafeBitCast(set, to: (@convention(c) (OpaquePointer?, Int32, Int32) -> Int).self)
        _ = setParameter(context, 201, 1)   // ZSTD_c_checksumFlag
        if let windowLog { _ = setParameter(context, 101, windowLog) }   // ZSTD_c_windowLog
        var output = [UInt8](repeating: 0, count: data.count + 1_024)
        let length = data.withUnsafeBytes { input in
            unsafeBitCast(compress, to: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, Int, UnsafeRawPointer?, Int) -> Int).self)(
                context, &output, output.count, input.baseAddress, input.count)
        }
        guard unsafeBitCast(isError, to: (@convention(c) (Int) -> UInt32).self)(length) == 0 else { return nil }
        return Data(output.prefix(length))
    }
}
#endif
