import Foundation

extension URL {
    /// The host as libcurl connects to it and browsers compare it: in lower case, and an IP
    /// address in its one spelling (see ``HostName/canonical(_:)``); `nil` without a host.
    ///
    /// Foundation keeps a host as written, and libcurl reads `127.1`, `0x7f.0.0.1` and
    /// `2130706433` all as `127.0.0.1`: compared as written, one server would be several hosts
    /// to certificate pins and cookies, and a pin for `127.0.0.1` would not hold for `127.1`.
    package var canonicalHost: String? { host.map(HostName.canonical) }
}

/// Host names compared as the connection sees them.
package enum HostName {
    /// `host` in lower case, with an IPv4 address in dotted decimal and an IPv6 address as
    /// `inet_ntop` writes it (`0:0::1` is `::1`); a name stays a name (`08.0.0.1`, `256.0.0.1`
    /// and `1.2.3.4.5` are names to libcurl too). An IPv4-mapped address (`::ffff:127.0.0.1`,
    /// `::ffff:7f00:1`) is its IPv4 address: a socket connecting to one reaches that address
    /// over IPv4. Other IPv6 forms holding an IPv4 address stay IPv6: an IPv4-compatible one
    /// (`::127.0.0.1`) is no route to it, and a NAT64 one (`64:ff9b::…`) reaches it only
    /// through a translator the network may not have (pins hold for it all the same: see
    /// ``nat64IPv4(_:)``).
    package static func canonical(_ host: String) -> String {
        var host = host.lowercased()
        // A name Foundation gave back decoded (`b%C3%BCcher.example` is `bücher.example` to
        // it), which libcurl converts to its ASCII form and connects to: compared in that form,
        // or a pin for `xn--bcher-kva.example` did not hold for it.
        if !host.utf8.allSatisfy({ $0 < 0x80 }) { host = ascii(host) }
        if host.utf8.contains(UInt8(ascii: ":")) { return ipv6(host) ?? host }
        // Every request's host comes here: a name (its first character no digit) or an address
        // written as it should be is given back without taking it apart.
        guard host.utf8.first.map({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) == true,
              !isDottedDecimal(host) else { return host }
        if let address = ipv4(host) {
            return "\(address >> 24).\(address >> 16 & 0xff).\(address >> 8 & 0xff).\(address & 0xff)"
        }
        return host
    }

    /// Whether `host` is four decimal bytes without leading zeros: an address as it should be.
    private static func isDottedDecimal(_ host: String) -> Bool {
        var parts = 0, value = 0, digits = 0
        for byte in host.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                parts += 1
                (value, digits) = (0, 0)
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                guard !(digits == 1 && value == 0) else { return false }   // a leading zero: octal
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return false }
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0
    }

    /// The IPv4 address `host` spells as libcurl reads one (`ipv4_normalize`, which browsers'
    /// URL parser agrees with where both take the host for an address): one to four parts, each
    /// decimal, hexadecimal after `0x` or octal after `0`, the last filling the bytes left.
    static func ipv4(_ host: String) -> UInt32? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let first = part.first, first.isASCII, first.isNumber else { return nil }
            let (digits, radix): (Substring, Int) =
                if part.count > 2, part.hasPrefix("0x") { (part.dropFirst(2), 16) }
                else if part.count > 1, first == "0" { (part.dropFirst(), 8) }
                else { (part, 10) }
            guard digits.allSatisfy(\.isASCII), let number = UInt64(digits, radix: radix), number <= UInt32.max else { return nil }
            numbers.append(number)
        }
        // Every part but the last is a byte; the last fills what is left.
        let leading = numbers.dropLast()
        guard leading.allSatisfy({ $0 <= 0xff }), let last = numbers.last, last < 1 << (8 * (4 - leading.count)) else { return nil }
        return UInt32(leading.enumerated().reduce(last) { $0 | $1.element << (8 * (3 - $1.offset)) })
    }

    /// The IPv4 address, in dotted decimal, that the NAT64 address `host` (in the well-known
    /// prefix `64:ff9b::/96`, RFC 6052) stands for; `nil` for any other host.
    package static func nat64IPv4(_ host: String) -> String? {
        guard host.hasPrefix("64:ff9b:"), let bytes = ipv6Bytes(host),
              bytes.prefix(12).elementsEqual([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]) else { return nil }
        return bytes.suffix(4).map(String.init).joined(separator: ".")
    }

    /// The 16 bytes of the IPv6 address `host` spells; `nil` if it spells none.
    private static func ipv6Bytes(_ host: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, host, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// `host` as `inet_ntop` writes the IPv6 address it spells, or the IPv4 address an
    /// IPv4-mapped one maps; `nil` if it spells none.
    private static func ipv6(_ host: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, host, &address) == 1 else { return nil }
        let mapped = withUnsafeBytes(of: &address) { bytes in
            bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) ? bytes.suffix(4).map(String.init) : nil
        }
        if let mapped { return mapped.joined(separator: ".") }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `name` as IDNA writes it for DNS, as libcurl's libidn2 does (UTS #46): compatibility
    /// forms and case folded (`ｐ` is `p`), the ideographic full stops taken as dots, each label
    /// with other than ASCII in Punycode after `xn--`; a trailing dot dropped, as for any name.
    static func ascii(_ name: String) -> String {
        let folded = name.precomposedStringWithCompatibilityMapping.lowercased()
        let labels = folded.split(omittingEmptySubsequences: false) { ["\u{3002}", "\u{FF0E}", "\u{FF61}", "."].contains($0) }
        var ascii = labels.map { label in
            // Past DNS's 63 octets a label resolves nowhere (libidn2 refuses it, and the request
            // fails), and Punycode's work grows with its square: such a label stays as it is.
            label.utf8.allSatisfy { $0 < 0x80 } || label.unicodeScalars.count > 63 ? String(label)
                : "xn--" + punycode(Array(label.unicodeScalars.map(\.value)))
        }
        if ascii.count > 1, ascii.last == "" { ascii.removeLast() }
        return ascii.joined(separator: ".")
    }

    /// `scalars` in Punycode (RFC 3492, §6.3).
    static func punycode(_ scalars: [UInt32]) -> String {
        let (base, tMin, tMax) = (36, 1, 26)
        func digit(_ value: Int) -> Character {
            Character(Unicode.Scalar(UInt8(value < 26 ? 97 + value : 22 + value)))
        }
        func adapt(_ delta: Int, _ points: Int, _ first: Bool) -> Int {
            var delta = first ? delta / 700 : delta / 2
            delta += delta / points
            var k = 0
            while delta > (base - tMin) * tMax / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + 38)
        }
        var output = String(scalars.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) })
        let basic = output.count
        if basic > 0 { output.append("-") }
        var (n, delta, bias, handled): (UInt32, Int, Int, Int) = (0x80, 0, 72, basic)
        while handled < scalars.count {
            let next = scalars.filter { $0 >= n }.min() ?? n
            delta += Int(next - n) * (handled + 1)
            n = next
            for scalar in scalars {
                if scalar < n { delta += 1 }
                guard scalar == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, handled + 1, handled == basic)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }
}
