import Glibc

/// One address a host name resolved to, as the client is about to connect to it.
///
/// The delivery worker's SSRF rule (API.md §14) is checked here, at connect time, on the very
/// address used, so a name that resolves to a public address when the endpoint is created and
/// to `127.0.0.1` at delivery time (DNS rebinding) is still refused.
package struct ResolvedAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, in network order.
    package var bytes: [UInt8]

    package init(bytes: [UInt8]) {
        precondition(bytes.count == 4 || bytes.count == 16, "an IP address is 4 or 16 bytes")
        self.bytes = bytes
    }

    /// The address in its usual text form (`203.0.113.7`, `2001:db8::1`).
    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in
            _ = inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, raw.baseAddress, &text, socklen_t(text.count))
        }
        return string(fromCBuffer: text)
    }

    /// Loopback, private (RFC 1918, RFC 4193), link-local, CGNAT (RFC 6598), unspecified,
    /// multicast or broadcast: anything a webhook to the outside world has no business reaching.
    package var isPrivateOrLocal: Bool {
        if bytes.count == 4 { return Self.isPrivateOrLocal(ipv4: bytes) }
        let isZero = { (range: Range<Int>) in self.bytes[range].allSatisfy { $0 == 0 } }
        // ::ffff:a.b.c.d is an IPv4 address in disguise.
        if isZero(0..<10), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return Self.isPrivateOrLocal(ipv4: Array(bytes[12...]))
        }
        if isZero(0..<15), bytes[15] <= 1 { return true }  // :: and ::1
        if bytes[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if bytes[0] == 0xFF { return true }  // multicast
        return false
    }

    private static func isPrivateOrLocal(ipv4 a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): true
        case (100, 64...127): true
        case (169, 254), (192, 168): true
        case (172, 16...31): true
        case (224...255, _): true
        default: false
        }
    }
}
