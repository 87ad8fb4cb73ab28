// The client side of the wire format: a response's status line (RFC 9112 §4), which is all the
// webhook client reads of an answer, and the field syntax it checks before sending a request.

/// The outcome of reading a status line from the first bytes of a response.
package enum StatusLineResult: Equatable, Sendable {
    /// `code` and `version` were read; `consumed` bytes up to and including the CRLF.
    case complete(code: Int, version: HTTPVersion, consumed: Int)
    /// No CRLF yet, and nothing so far is wrong.
    case needMore
    /// Not a status line, with the reason.
    case invalid(String)
}

/// Reads `HTTP-version SP status-code SP [reason-phrase] CRLF` (RFC 9112 §4).
package enum StatusLine {
    /// A reason phrase longer than this is refused rather than buffered: we ignore it anyway.
    package static let maxLength = 1024

    /// Parses the status line at the start of `bytes`.
    ///
    /// As strict as the request parser: CRLF only, exactly one SP after the version, three
    /// digits, and a reason phrase of HTAB, SP, VCHAR and obs-text. One leniency from §4: a
    /// line that ends right after the code (`HTTP/1.1 204\r\n`) is accepted.
    package static func parse(_ bytes: some Collection<UInt8>) -> StatusLineResult {
        let line = Array(bytes.prefix(maxLength + 2))
        let prefix = Array("HTTP/".utf8)
        for (index, expected) in prefix.enumerated() {
            guard index < line.count else { return .needMore }
            guard line[index] == expected else { return .invalid("not an HTTP response") }
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT, then SP and 3DIGIT (RFC 9112 §2.3, §4).
        let shape: [(Int, (UInt8) -> Bool, String)] = [
            (5, isDigit, "version major"), (6, { $0 == UInt8(ascii: ".") }, "version dot"),
            (7, isDigit, "version minor"), (8, { $0 == HTTPBytes.sp }, "space after version"),
            (9, isDigit, "status code"), (10, isDigit, "status code"), (11, isDigit, "status code"),
        ]
        for (index, check, what) in shape {
            guard index < line.count else { return .needMore }
            guard check(line[index]) else { return .invalid("bad \(what)") }
        }
        let version = HTTPVersion(major: Int(line[5] &- 0x30), minor: Int(line[7] &- 0x30))
        guard version.major == 1 else { return .invalid("not HTTP/1.x") }
        let code = Int(line[9] &- 0x30) * 100 + Int(line[10] &- 0x30) * 10 + Int(line[11] &- 0x30)
        guard code >= 100 else { return .invalid("status code below 100") }
        var index = 12
        guard index < line.count else { return .needMore }
        if line[index] == HTTPBytes.sp {
            index += 1
            while index < line.count, line[index] != HTTPBytes.cr {
                guard HTTPBytes.isFieldValueByte(line[index]) else { return .invalid("control byte in reason phrase") }
                index += 1
            }
        }
        guard index < line.count else {
            return line.count > maxLength ? .invalid("status line too long") : .needMore
        }
        guard line[index] == HTTPBytes.cr else { return .invalid("bad byte after status code") }
        guard index + 1 < line.count else { return .needMore }
        guard line[index + 1] == HTTPBytes.lf else { return .invalid("CR not followed by LF") }
        return .complete(code: code, version: version, consumed: index + 2)
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}

/// The field syntax of RFC 9110 §5, for a client that writes header fields it was handed.
package enum HTTPFieldSyntax {
    /// A field name: one or more `tchar`.
    package static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(HTTPBytes.isTchar)
    }

    /// A field value: no CR, LF, NUL or other control except HTAB, and no leading or trailing
    /// whitespace, so it cannot split into a second field or a second request.
    package static func isValidValue(_ value: String) -> Bool {
        let bytes = value.utf8
        guard bytes.allSatisfy(HTTPBytes.isFieldValueByte) else { return false }
        guard let first = bytes.first, let last = bytes.last else { return true }
        return !HTTPBytes.isOWS(first) && !HTTPBytes.isOWS(last)
    }
}
