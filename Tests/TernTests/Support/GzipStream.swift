#if os(Linux)
import Foundation

/// Gzip streams made in the tests, with nothing compressed: deflate's stored blocks, which any
/// inflater reads, around any bytes; the CRC-32 is zlib's own (loaded as Tern loads it).
enum GzipStream {
    /// `data` as one gzip member.
    static func stored(_ data: Data) -> Data {
        var gzip = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])
        gzip.append(deflateStored(data))
        gzip.append(contentsOf: withUnsafeBytes(of: crc32(data).littleEndian) { Array($0) })
        gzip.append(contentsOf: withUnsafeBytes(of: UInt32(truncatingIfNeeded: data.count).littleEndian) { Array($0) })
        return gzip
    }

    /// `data` in zlib's framing, as HTTP's "deflate" means; `raw` leaves the framing out, as
    /// some servers do.
    static func deflate(_ data: Data, raw: Bool = false) -> Data {
        guard !raw else { return deflateStored(data) }
        var zlib = Data([0x78, 0x01])
        zlib.append(deflateStored(data))
        zlib.append(contentsOf: withUnsafeBytes(of: adler32(data).bigEndian) { Array($0) })
        return zlib
    }

    /// `data` compressed for real (zlib's `compress2`, best compression), as one gzip member.
    static func compressed(_ data: Data) -> Data {
        let zlib = zlibCompressed(data)
        var gzip = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 2, 0xFF])
        gzip.append(zlib.dropFirst(2).dropLast(4))   // the raw stream, without zlib's framing
        gzip.append(contentsOf: withUnsafeBytes(of: crc32(data).littleEndian) { Array($0) })
        gzip.append(contentsOf: withUnsafeBytes(of: UInt32(truncatingIfNeeded: data.count).littleEndian) { Array($0) })
        return gzip
    }

    /// `data` in zlib's framing, compressed at its best.
    static func zlibCompressed(_ data: Data) -> Data {
        guard let library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(library, "compress2") else { return Data() }
        typealias Compress = @convention(c) (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt>?, UnsafePointer<UInt8>?, UInt, Int32) -> Int32
        let compress = unsafeBitCast(symbol, to: Compress.self)
        var output = [UInt8](repeating: 0, count: data.count + data.count / 100 + 64)
        var length = UInt(output.count)
        let result = data.withUnsafeBytes { input in
            compress(&output, &length, input.bindMemory(to: UInt8.self).baseAddress, UInt(input.count), 9)
        }
        return result == 0 ? Data(output.prefix(Int(length))) : Data()
    }

    /// Stored blocks of at most 65,535 bytes; the last is marked final.
    private static func deflateStored(_ data: Data) -> Data {
        var blocks = Data()
        var offset = data.startIndex
        repeat {
            let count = min(65_535, data.endIndex - offset)
            let isLast = offset + count == data.endIndex
            blocks.append(isLast ? 1 : 0)
            blocks.append(contentsOf: [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)])
            blocks.append(data[offset..<(offset + count)])
            offset += count
        } while offset < data.endIndex
        return blocks
    }

    private static func adler32(_ data: Data) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func crc32(_ data: Data) -> UInt32 {
        guard let library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(library, "crc32") else { return 0 }
        typealias CRC = @convention(c) (UInt, UnsafePointer<UInt8>?, UInt32) -> UInt
        let crc = unsafeBitCast(symbol, to: CRC.self)
        return data.withUnsafeBytes { UInt32(truncatingIfNeeded: crc(0, $0.bindMemory(to: UInt8.self).baseAddress, UInt32($0.count))) }
    }
}
#endif
