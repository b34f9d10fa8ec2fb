import Foundation

/// SHA-256 (FIPS 180-4): what the cache keeps of a credential, and the digest a recording
/// keeps of a large request body. The toolchain has none on Linux, and the library takes no
/// dependency. Fed a piece at a time, so that a body read from disk is never held whole.
package struct SHA256Digest {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    /// The bytes of a block not yet whole.
    private var pending: [UInt8] = []
    private var length: UInt64 = 0
    private var w = [UInt32](repeating: 0, count: 64)

    /// A digest of nothing yet.
    package init() {
        pending.reserveCapacity(64)
    }

    /// The digest of `data`, in lower-case hexadecimal.
    package static func hex(_ data: Data) -> String {
        var digest = SHA256Digest()
        digest.update(data)
        return digest.hex()
    }

    /// The digest of `data`.
    package static func digest(_ data: Data) -> [UInt8] {
        var digest = SHA256Digest()
        digest.update(data)
        return digest.finish()
    }

    /// Takes in the next bytes.
    package mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest of everything taken in, in lower-case hexadecimal.
    package func hex() -> String {
        finish().map { String(format: "%02x", $0) }.joined()
    }

    /// The digest of everything taken in.
    package func finish() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        var tail = pending + [0x80]
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBytes { copy.compress($0) }
        return copy.h.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) } }
    }

    /// Takes in the next bytes.
    package mutating func update(_ buffer: UnsafeRawBufferPointer) {
        length &+= UInt64(buffer.count)
        var start = 0
        if !pending.isEmpty {
            let taken = min(64 - pending.count, buffer.count)
            pending.append(contentsOf: buffer[0..<taken])
            start = taken
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let whole = (buffer.count - start) / 64 * 64
        if whole > 0 { compress(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + whole)])) }
        pending.append(contentsOf: buffer[(start + whole)...])
    }

    /// Takes in `blocks`, a whole number of 64-byte blocks.
    private mutating func compress(_ blocks: UnsafeRawBufferPointer) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
        w.withUnsafeMutableBufferPointer { w in
            Self.k.withUnsafeBufferPointer { k in
                for block in stride(from: 0, to: blocks.count, by: 64) {
                    for i in 0..<16 {
                        w[i] = UInt32(bigEndian: blocks.loadUnaligned(fromByteOffset: block + i * 4, as: UInt32.self))
                    }
                    // Rotations written out: a test build does not inline, and this loop runs
                    // once for each 64 bytes of a recorded upload.
                    for i in 16..<64 {
                        let x = w[i - 15], y = w[i - 2]
                        let s0 = (x >> 7 | x << 25) ^ (x >> 18 | x << 14) ^ (x >> 3)
                        let s1 = (y >> 17 | y << 15) ^ (y >> 19 | y << 13) ^ (y >> 10)
                        w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, hh) = (h0, h1, h2, h3, h4, h5, h6, h7)
                    for i in 0..<64 {
                        let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                        let t1 = hh &+ s1 &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
                        let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                        let t2 = s0 &+ ((a & b) ^ (a & c) ^ (b & c))
                        hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
                    }
                    (h0, h1, h2, h3, h4, h5, h6, h7) = (h0 &+ a, h1 &+ b, h2 &+ c, h3 &+ d, h4 &+ e, h5 &+ f, h6 &+ g, h7 &+ hh)
                }
            }
        }
        h = [h0, h1, h2, h3, h4, h5, h6, h7]
    }
}
