import StringBytes

// The `Host` field value (RFC 9112 §3.2): `uri-host [ ":" port ]`, with RFC 3986's grammar
//
//   host        = IP-literal / IPv4address / reg-name
//   IP-literal  = "[" ( IPv6address / IPvFuture ) "]"
//   reg-name    = *( unreserved / pct-encoded / sub-delims )
//
// An IPv4address is also a reg-name, so it needs no test of its own outside an IPv6 tail.
// Stricter than RFC 3986 where a server gains nothing from the freedom: a ':' must be followed
// by a port of 1 to 5 digits up to 65535 (`example.com:` is refused), and a port needs a host.
// The empty value is allowed: RFC 9112 §3.2 has clients send it when the target has no authority.

/// Whether `value` is a valid `Host` field value.
func isValidHost(_ value: String) -> Bool {
    return withUTF8Bytes(value) { bytes in
        if bytes.isEmpty { return true }
        var hostEnd: Int
        if bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
                isIPLiteral(UnsafeBufferPointer(rebasing: bytes[1..<close]))
            else { return false }
            hostEnd = close + 1
        } else {
            // A reg-name, `*( unreserved / pct-encoded / sub-delims )`, up to a ':' or the end:
            // one pass, one bitmask test per ordinary byte.
            hostEnd = 0
            while hostEnd < bytes.count {
                let b = bytes[hostEnd]
                if isRegNameByte(b) {
                    hostEnd += 1
                    continue
                }
                if b == UInt8(ascii: ":") { break }
                guard b == UInt8(ascii: "%"), hostEnd + 2 < bytes.count,
                    HTTPBytes.hexValue(bytes[hostEnd + 1]) != nil, HTTPBytes.hexValue(bytes[hostEnd + 2]) != nil
                else { return false }
                hostEnd += 3
            }
            guard hostEnd > 0 else { return false }
        }
        if hostEnd == bytes.count { return true }
        guard bytes[hostEnd] == UInt8(ascii: ":") else { return false }
        return isPort(UnsafeBufferPointer(rebasing: bytes[(hostEnd + 1)...]))
    }
}

/// 1 to 5 digits, at most 65535.
private func isPort(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
    guard (1...5).contains(digits.count) else { return false }
    var n = 0
    for b in digits {
        guard isDigit(b) else { return false }
        n = n * 10 + Int(b &- 0x30)
    }
    return n <= 65535
}

/// What is between the brackets: `IPv6address / IPvFuture`.
private func isIPLiteral(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let first = bytes.first else { return false }
    return first | 0x20 == UInt8(ascii: "v") ? isIPvFuture(bytes) : isIPv6(bytes)
}

/// `"v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )`.
private func isIPvFuture(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var i = 1
    while i < bytes.count, HTTPBytes.hexValue(bytes[i]) != nil { i += 1 }
    guard i > 1, i < bytes.count, bytes[i] == UInt8(ascii: ".") else { return false }
    let rest = bytes[(i + 1)...]
    return !rest.isEmpty && rest.allSatisfy { isRegNameByte($0) || $0 == UInt8(ascii: ":") }
}

/// RFC 3986 §3.2.2 `IPv6address`: eight 16-bit groups of 1 to 4 hex digits, or fewer with one
/// `::`, the last two groups possibly written as an IPv4 address.
private func isIPv6(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    let colon = UInt8(ascii: ":")
    let end = bytes.count
    var i = 0
    var groups = 0
    var compressed = false
    if end >= 2, bytes[0] == colon, bytes[1] == colon {
        compressed = true
        i = 2
        if i == end { return true }
    } else if end == 0 || bytes[0] == colon {
        return false
    }
    while true {
        let groupStart = i
        while i < end, i - groupStart < 5, HTTPBytes.hexValue(bytes[i]) != nil { i += 1 }
        if i < end, bytes[i] == UInt8(ascii: ".") {
            // An IPv4 tail ends the address and stands for two groups.
            guard isIPv4(UnsafeBufferPointer(rebasing: bytes[groupStart..<end])) else { return false }
            groups += 2
            break
        }
        guard (1...4).contains(i - groupStart) else { return false }
        groups += 1
        if i == end { break }
        guard bytes[i] == colon else { return false }
        i += 1
        if i < end, bytes[i] == colon {
            guard !compressed else { return false }
            compressed = true
            i += 1
            if i == end { break }
        } else if i == end {
            return false  // a single trailing ':'
        }
    }
    return compressed ? groups <= 7 : groups == 8
}

/// `dec-octet "." dec-octet "." dec-octet "." dec-octet`, each 0 to 255 without leading zeros.
private func isIPv4(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var octets = 0
    var i = 0
    while true {
        let start = i
        var n = 0
        while i < bytes.count, isDigit(bytes[i]), i - start < 3 {
            n = n * 10 + Int(bytes[i] &- 0x30)
            i += 1
        }
        let length = i - start
        guard length > 0, n <= 255, length == 1 || bytes[start] != UInt8(ascii: "0") else { return false }
        octets += 1
        if octets == 4 { return i == bytes.count }
        guard i < bytes.count, bytes[i] == UInt8(ascii: ".") else { return false }
        i += 1
    }
}

@inline(__always)
private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

/// `unreserved / sub-delims`: `ALPHA / DIGIT / "-" / "." / "_" / "~"` and
/// `"!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`, as two bitmasks (one test
/// per byte of a host name, like `HTTPBytes.isTchar`).
@inline(__always)
private func isRegNameByte(_ b: UInt8) -> Bool {
    HTTPBytes.isIn(b, low: 0x2BFF_7FD2_0000_0000, high: 0x47FF_FFFE_87FF_FFFE)
}
