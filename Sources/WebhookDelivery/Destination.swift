import Glibc

/// Where a webhook URL points: `http` or `https`, a host, a port, a path.
package struct WebhookDestination: Sendable, Equatable {
    package var secure: Bool
    package var host: String
    package var port: Int
    /// The request target, `/` when the URL has none.
    package var target: String

    /// Parses `http://host[:port][/path][?query]` or `https://…`; nil for anything else.
    /// An IPv6 literal is written in brackets, as RFC 3986 §3.2.2 has it.
    package init?(url: String) {
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            secure = true
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            secure = false
            rest = url.dropFirst(7)
        } else {
            return nil
        }
        guard !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        guard !authority.contains("@") else { return nil }  // no credentials in a webhook URL
        var hostPart = Substring(authority)
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { return nil }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = secure ? 443 : 80
        }
        target = path
    }
}

/// Why a destination is refused.
package struct DestinationError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// The SSRF rule of API.md §14: a webhook may not point into the server's own networks.
package struct DestinationPolicy: Sendable {
    /// `webhookAllowPrivateNetworks`: on for tests and for receivers on the same network.
    package var allowPrivateNetworks: Bool

    package init(allowPrivateNetworks: Bool) { self.allowPrivateNetworks = allowPrivateNetworks }

    /// Parses and resolves `url`; refuses a host any of whose addresses is loopback, private,
    /// link-local or otherwise not on the public internet, unless private networks are allowed.
    /// Checking every address (not just the first) means a name with one public and one
    /// private record cannot be used to reach the private one.
    @discardableResult
    package func check(_ url: String) throws(DestinationError) -> WebhookDestination {
        guard let destination = WebhookDestination(url: url) else {
            throw DestinationError("The URL must be http:// or https:// with a host.")
        }
        if allowPrivateNetworks { return destination }
        let addresses = try Self.resolve(destination.host)
        if let refused = addresses.first(where: Self.isInternal) {
            throw DestinationError("\(destination.host) resolves to \(refused.text), a non-public address.")
        }
        return destination
    }

    /// One resolved address, as bytes (4 or 16) and as text for messages.
    package struct Address: Sendable {
        package var bytes: [UInt8]
        package var text: String
    }

    /// `getaddrinfo` of the host: every IPv4 and IPv6 address it has.
    package static func resolve(_ host: String) throws(DestinationError) -> [Address] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw DestinationError("\(host) does not resolve: \(String(cString: gai_strerror(status))).")
        }
        defer { freeaddrinfo(first) }
        var addresses: [Address] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = Self.address(current.pointee) { addresses.append(address) }
            node = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw DestinationError("\(host) has no address.") }
        return addresses
    }

    /// The text `inet_ntop` wrote, up to its terminating NUL.
    private static func string(fromNulTerminated buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func address(_ info: addrinfo) -> Address? {
        guard let sockaddr = info.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch info.ai_family {
        case AF_INET:
            var v4 = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            let bytes = withUnsafeBytes(of: &v4) { Array($0) }
            inet_ntop(AF_INET, &v4, &text, socklen_t(text.count))
            return Address(bytes: bytes, text: string(fromNulTerminated: text))
        case AF_INET6:
            var v6 = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count))
            return Address(bytes: bytes, text: string(fromNulTerminated: text))
        default:
            return nil
        }
    }

    /// Loopback, private (RFC 1918, RFC 4193), link-local, carrier-grade NAT, unspecified,
    /// multicast and broadcast addresses, and IPv4-mapped IPv6 forms of them.
    package static func isInternal(_ address: Address) -> Bool {
        let b = address.bytes
        if b.count == 4 { return isInternalV4(b) }
        guard b.count == 16 else { return true }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return isInternalV4(Array(b[12...])) }
        if b[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if b[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if b[0] == 0xFF { return true }  // multicast
        return false
    }

    private static func isInternalV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): true
        case (169, 254), (192, 168): true
        case (172, 16...31): true
        case (100, 64...127): true  // carrier-grade NAT
        case (224...255, _): true  // multicast, reserved, broadcast
        default: false
        }
    }
}
