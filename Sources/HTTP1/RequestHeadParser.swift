// The request-head scanner behind `parseRequestHead`.
//
// Model: picohttpparser's `phr_parse_request` (a pure function over the bytes so far, with
// `last_len` to avoid rescanning), made stricter (RFC 9112): CRLF only, no obs-fold, no space
// before the colon, visible-ASCII targets, and every limit checked on partial input.
//
// Resumption is line-granular: `needMore(scanned:)` returns the offset of the first line that is
// not yet complete, every line before it having been validated. A later call validates only from
// there on (plus a byte count of the line feeds before it, to recover the field count). The
// incomplete line itself is rescanned, so its cost is bounded by the longest line the limits allow.

// MARK: - Entry

func parseRequestHeadImpl(
    _ buffer: UnsafeRawBufferPointer, limits: HTTPParserLimits, scanned: Int
) -> HTTPHeadParseResult {
    var resumeAt = 0
    var fieldsBefore = 0
    if let resume = RequestHeadScanner.resumePoint(buffer, limits: limits, scanned: scanned) {
        resumeAt = resume.offset
        fieldsBefore = resume.fieldCount
    }
    var scanner = RequestHeadScanner(bytes: buffer, limits: limits)
    switch scanner.run(from: resumeAt, fieldCount: fieldsBefore) {
    case .needMore(let lineStart):
        return .needMore(scanned: lineStart)
    case .invalid(let error):
        return .invalid(error)
    case .complete(let consumed):
        if resumeAt == 0 { return .complete(scanner.makeHead(), consumed: consumed) }
        // Lines before `resumeAt` were validated by an earlier call but not recorded by this one:
        // record the whole head once, now that it is complete.
        var full = RequestHeadScanner(bytes: buffer, limits: limits)
        switch full.run(from: 0, fieldCount: 0) {
        case .complete(let consumed): return .complete(full.makeHead(), consumed: consumed)
        case .needMore(let lineStart): return .needMore(scanned: lineStart)
        case .invalid(let error): return .invalid(error)
        }
    }
}

// MARK: - Scanner

struct RequestHeadScanner {
    enum Outcome {
        case complete(consumed: Int)
        case needMore(lineStart: Int)
        case invalid(HTTPParseError)
    }

    /// Byte offsets of one field line; the value is not yet trimmed.
    struct FieldSpan {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int
    }

    let bytes: UnsafeRawBufferPointer
    let limits: HTTPParserLimits

    private(set) var methodStart = 0
    private(set) var methodEnd = 0
    private(set) var targetStart = 0
    private(set) var targetEnd = 0
    private(set) var version = HTTPVersion.http1_1
    private(set) var fields: [FieldSpan] = []

    init(bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Where an earlier call left off, if `scanned` is a line start after the request line.
    /// Anything else (0, out of range, not just after a CRLF) restarts from the beginning.
    static func resumePoint(
        _ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits, scanned: Int
    ) -> (offset: Int, fieldCount: Int)? {
        guard scanned >= 2, scanned <= bytes.count,
            bytes[scanned - 1] == HTTPBytes.lf, bytes[scanned - 2] == HTTPBytes.cr
        else { return nil }
        // Skip the leading empty lines exactly as `run` does, to find the request line.
        var requestLineStart = 0
        var empties = 0
        while requestLineStart + 1 < scanned, empties <= limits.maxLeadingEmptyLines,
            bytes[requestLineStart] == HTTPBytes.cr, bytes[requestLineStart + 1] == HTTPBytes.lf
        {
            requestLineStart += 2
            empties += 1
        }
        guard scanned > requestLineStart else { return nil }
        // One LF ends the request line; each further one ends a field line.
        var lineFeeds = 0
        for i in requestLineStart..<scanned where bytes[i] == HTTPBytes.lf { lineFeeds &+= 1 }
        return (scanned, lineFeeds - 1)
    }

    /// Out of bytes at `index`: a head needing byte `index` would be longer than the section
    /// limit if `index >= maxHeaderSectionBytes` (431); otherwise wait for more.
    @inline(__always)
    private func outOfBytes(at index: Int, lineStart: Int) -> Outcome {
        index >= limits.maxHeaderSectionBytes
            ? .invalid(HTTPParseError.headersTooLarge("header section exceeds \(limits.maxHeaderSectionBytes) bytes"))
            : .needMore(lineStart: lineStart)
    }

    /// Validates from `start` (0, or a line start after the request line) to the end of the head.
    mutating func run(from start: Int, fieldCount initialFieldCount: Int) -> Outcome {
        // Bytes at or beyond the section limit can never belong to an acceptable head.
        let stop = min(bytes.count, max(limits.maxHeaderSectionBytes, 0))
        var i = start
        var fieldCount = initialFieldCount

        if start == 0 {
            // MARK: Leading empty lines (RFC 9112 §2.2), bounded.
            var empties = 0
            while true {
                guard i < stop else { return outOfBytes(at: i, lineStart: 0) }
                let b = bytes[i]
                if b == HTTPBytes.lf { return .invalid(.badRequest("bare LF before the request line")) }
                if b != HTTPBytes.cr { break }
                guard i + 1 < stop else { return outOfBytes(at: i + 1, lineStart: 0) }
                guard bytes[i + 1] == HTTPBytes.lf else {
                    return .invalid(.badRequest("bare CR before the request line"))
                }
                empties += 1
                if empties > limits.maxLeadingEmptyLines {
                    return .invalid(.badRequest("too many empty lines before the request line"))
                }
                i += 2
            }

            // MARK: Method: a token, then exactly one SP (RFC 9112 §3).
            methodStart = i
            while true {
                guard i < stop else { return outOfBytes(at: i, lineStart: 0) }
                let b = bytes[i]
                if b == HTTPBytes.sp { break }
                guard HTTPBytes.isTchar(b) else {
                    return .invalid(.badRequest(Self.describe(b, in: "method")))
                }
                i += 1
            }
            guard i > methodStart else { return .invalid(.badRequest("empty method")) }
            methodEnd = i
            i += 1

            // MARK: Target: origin-form, or `*` for OPTIONS (RFC 9112 §3.2).
            targetStart = i
            guard i < stop else { return outOfBytes(at: i, lineStart: 0) }
            let first = bytes[i]
            if first == HTTPBytes.sp { return .invalid(.badRequest("more than one SP after the method")) }
            let isAsterisk = first == HTTPBytes.asterisk
            if isAsterisk {
                guard methodIs("OPTIONS") else {
                    return .invalid(.badRequest("asterisk-form target is only allowed with OPTIONS"))
                }
            } else if first != HTTPBytes.slash {
                guard HTTPBytes.isTargetByte(first) else {
                    return .invalid(.badRequest(Self.describe(first, in: "request target")))
                }
                return .invalid(.badRequest("request target must be origin-form (start with '/')"))
            }
            while true {
                guard i < stop else { return outOfBytes(at: i, lineStart: 0) }
                let b = bytes[i]
                if b == HTTPBytes.sp { break }
                guard HTTPBytes.isTargetByte(b) else {
                    return .invalid(.badRequest(Self.describe(b, in: "request target")))
                }
                i += 1
                let length = i - targetStart
                // Checked per byte so an endless target is refused before its line ends.
                if length > limits.maxTargetLength {
                    return .invalid(HTTPParseError.uriTooLong(
                        "request target exceeds \(limits.maxTargetLength) bytes"))
                }
                if isAsterisk && length > 1 {
                    return .invalid(.badRequest("asterisk-form target must be exactly '*'"))
                }
            }
            targetEnd = i
            i += 1

            // MARK: Version: `HTTP/` DIGIT `.` DIGIT CRLF, nothing else (RFC 9112 §2.3).
            let versionStart = i
            for k in 0..<10 {
                guard i < stop else { return outOfBytes(at: i, lineStart: 0) }
                let b = bytes[i]
                let ok: Bool
                switch k {
                case 0: ok = b == 0x48  // H
                case 1, 2: ok = b == 0x54  // T
                case 3: ok = b == 0x50  // P
                case 4: ok = b == HTTPBytes.slash
                case 5, 7: ok = b >= 0x30 && b <= 0x39
                case 6: ok = b == 0x2E  // .
                case 8:
                    if b == HTTPBytes.lf { return .invalid(.badRequest("bare LF after the request line")) }
                    ok = b == HTTPBytes.cr
                default:
                    if b != HTTPBytes.lf { return .invalid(.badRequest("bare CR in the request line")) }
                    ok = true
                }
                guard ok else {
                    return .invalid(.badRequest(
                        b == HTTPBytes.sp
                            ? "more than one SP in the request line" : "malformed HTTP version"))
                }
                i += 1
            }
            let major = Int(bytes[versionStart + 5] &- 0x30)
            let minor = Int(bytes[versionStart + 7] &- 0x30)
            guard major == 1, minor == 0 || minor == 1 else {
                return .invalid(HTTPParseError.versionNotSupported("HTTP/\(major).\(minor) is not supported"))
            }
            version = HTTPVersion(major: major, minor: minor)
        }

        // MARK: Field lines until the empty line (RFC 9112 §5).
        while true {
            let lineStart = i
            guard i < stop else { return outOfBytes(at: i, lineStart: lineStart) }
            let b0 = bytes[i]
            if b0 == HTTPBytes.cr {
                guard i + 1 < stop else { return outOfBytes(at: i + 1, lineStart: lineStart) }
                guard bytes[i + 1] == HTTPBytes.lf else {
                    return .invalid(.badRequest("bare CR at the end of the header section"))
                }
                return .complete(consumed: i + 2)
            }
            if b0 == HTTPBytes.lf { return .invalid(.badRequest("bare LF in the header section")) }
            if HTTPBytes.isOWS(b0) {
                // RFC 9112 §5.2: obs-fold is refused; §2.2: so is whitespace before the first field.
                return .invalid(.badRequest("obsolete line folding (line starts with whitespace)"))
            }
            fieldCount += 1
            if fieldCount > limits.maxHeaderCount {
                return .invalid(HTTPParseError.headersTooLarge(
                    "more than \(limits.maxHeaderCount) header fields"))
            }

            // Name: a non-empty token immediately followed by ':' (RFC 9112 §5.1).
            let nameStart = i
            while true {
                guard i < stop else { return outOfBytes(at: i, lineStart: lineStart) }
                let b = bytes[i]
                if b == HTTPBytes.colon { break }
                guard HTTPBytes.isTchar(b) else {
                    if HTTPBytes.isOWS(b) {
                        return .invalid(.badRequest("whitespace between field name and colon"))
                    }
                    if b == HTTPBytes.cr || b == HTTPBytes.lf {
                        return .invalid(.badRequest("header line without a colon"))
                    }
                    return .invalid(.badRequest(Self.describe(b, in: "field name")))
                }
                i += 1
            }
            guard i > nameStart else { return .invalid(.badRequest("empty field name")) }
            let nameEnd = i
            i += 1

            // Value: VCHAR, obs-text, SP, HTAB; CRLF ends it.
            let valueStart = i
            while true {
                guard i < stop else { return outOfBytes(at: i, lineStart: lineStart) }
                let b = bytes[i]
                if b == HTTPBytes.cr { break }
                guard HTTPBytes.isFieldValueByte(b) else {
                    if b == HTTPBytes.lf { return .invalid(.badRequest("bare LF in a field value")) }
                    return .invalid(.badRequest(Self.describe(b, in: "field value")))
                }
                i += 1
            }
            let valueEnd = i
            guard i + 1 < stop else { return outOfBytes(at: i + 1, lineStart: lineStart) }
            guard bytes[i + 1] == HTTPBytes.lf else {
                return .invalid(.badRequest("bare CR in a field value"))
            }
            i += 2
            fields.append(
                FieldSpan(nameStart: nameStart, nameEnd: nameEnd, valueStart: valueStart, valueEnd: valueEnd))
        }
    }

    /// Builds the head from the recorded offsets; call only after `run` returned `.complete` from 0.
    func makeHead() -> HTTPRequestHead {
        var headers = HTTPHeaders()
        for field in fields {
            var start = field.valueStart
            var end = field.valueEnd
            while start < end, HTTPBytes.isOWS(bytes[start]) { start += 1 }
            while end > start, HTTPBytes.isOWS(bytes[end - 1]) { end -= 1 }
            headers.add(name: string(field.nameStart, field.nameEnd), value: string(start, end))
        }
        return HTTPRequestHead(
            method: HTTPMethod(rawValue: string(methodStart, methodEnd)),
            target: string(targetStart, targetEnd),
            version: version,
            headers: headers)
    }

    /// Names, methods and targets are ASCII; values may hold obs-text, which becomes U+FFFD
    /// where it is not valid UTF-8.
    private func string(_ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    private func methodIs(_ name: StaticString) -> Bool {
        guard methodEnd - methodStart == name.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for k in 0..<expected.count where bytes[methodStart + k] != expected[k] { return false }
        return true
    }

    private static func describe(_ b: UInt8, in part: String) -> String {
        switch b {
        case 0: "NUL in \(part)"
        case HTTPBytes.cr: "bare CR in \(part)"
        case HTTPBytes.lf: "bare LF in \(part)"
        case HTTPBytes.sp: "space in \(part)"
        case 0x7F: "DEL in \(part)"
        case 0x80...: "non-ASCII byte in \(part)"
        case ..<0x20: "control character in \(part)"
        default: "invalid character in \(part)"
        }
    }
}
