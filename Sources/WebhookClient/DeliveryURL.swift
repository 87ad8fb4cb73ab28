/// A webhook endpoint's URL, split into what the client needs: scheme, host, port, target.
package struct DeliveryURL: Hashable, Sendable {
    /// `https://`.
    package var isTLS: Bool
    /// The host without brackets: a DNS name, an IPv4 or an IPv6 literal.
    package var host: String
    /// The port, 80 or 443 unless given.
    package var port: Int
    /// The request target: path and query, at least `/` (the fragment is never sent).
    package var target: String

    /// Whether ``host`` is an IP literal: no SNI is sent for one (RFC 6066 §3).
    package var hostIsIPLiteral: Bool {
        host.contains(":") || host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }
    }

    /// The `Host` field value: brackets around IPv6, the port unless it is the scheme's default.
    package var hostField: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Parses `http://host[:port][/path][?query][#fragment]` (or `https://`).
    ///
    /// Stricter than a browser: no userinfo (`user@` would hide the real host from a reader),
    /// ASCII host names only (IDNs come punycoded), and a target of visible ASCII.
    /// - Throws: ``WebhookClientError`` of kind `invalidURL`.
    package init(_ string: String) throws {
        func invalid(_ why: String) -> WebhookClientError { WebhookClientError(.invalidURL, why) }
        let lowered = string.lowercased()
        let rest: Substring
        if lowered.hasPrefix("https://") {
            isTLS = true
            rest = string.dropFirst(8)
        } else if lowered.hasPrefix("http://") {
            isTLS = false
            rest = string.dropFirst(7)
        } else {
            throw invalid("only http:// and https:// URLs")
        }
        let withoutFragment = rest.prefix { $0 != "#" }
        let authorityEnd = withoutFragment.firstIndex { $0 == "/" || $0 == "?" } ?? withoutFragment.endIndex
        let authority = withoutFragment[..<authorityEnd]
        let path = withoutFragment[authorityEnd...]
        guard !authority.contains("@") else { throw invalid("userinfo is not allowed") }

        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("unclosed [ in host") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("junk after ]") }
                portPart = after.dropFirst()
            }
            guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw invalid("bad IPv6 literal")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            } else {
                hostPart = authority
            }
            let allowed = { (c: Character) in
                c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "." || c == "_")
            }
            guard !hostPart.isEmpty, hostPart.allSatisfy(allowed) else { throw invalid("bad host name") }
        }
        host = hostPart.lowercased()
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy(\.isASCII),
                let value = Int(portPart), (1...65535).contains(value)
            else { throw invalid("bad port") }
            port = value
        } else {
            port = isTLS ? 443 : 80
        }
        var target = path.hasPrefix("/") ? String(path) : "/" + path
        if target.isEmpty { target = "/" }
        guard target.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw invalid("the path must be visible ASCII (percent-encode the rest)")
        }
        self.target = target
    }
}
