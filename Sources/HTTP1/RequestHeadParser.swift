// The request-head scanner behind `parseRequestHead`.
//
// Model: picohttpparser's `phr_parse_request` (a pure function over the bytes so far, with
// `last_len` to avoid rescanning), made stricter (RFC 9112): CRLF only, no obs-fold, no space
// before the colon, visible-ASCII targets, and every limit checked on partial input.
//
// Resumption: `needMore` returns an `HTTPHeadResumePoint` that records how many bytes were
// validated and, in the field lines, the phase and field count there. A later call continues
// from it and validates only the new bytes; once the head is complete, one more pass records its
// offsets. So the work is linear however the head arrives. Inside the request line the part is
// found again from its SPs; the method and target limits bound that.

// MARK: - Entry

func parseRequestHeadImpl(
    _ buffer: UnsafeRawBufferPointer, limits: HTTPParserLimits, resumingFrom point: HTTPHeadResumePoint,
    repeating last: inout RepeatedFieldLines
) -> HTTPHeadParseResult {
    var scanner = RequestHeadScanner(bytes: buffer, limits: limits)
    let resumed = scanner.resume(at: point)
    switch scanner.run() {
    case .needMore(let point):
        return .needMore(point)
    case .invalid(let error):
        return .invalid(error)
    case .complete(let consumed):
        if !resumed { return .complete(scanner.makeHead(repeating: &last), consumed: consumed) }
        // Lines before the resume point were validated by an earlier call but not recorded by
        // this one: record the whole head once, now that it is complete.
        var full = RequestHeadScanner(bytes: buffer, limits: limits)
        switch full.run() {
        case .complete(let consumed): return .complete(full.makeHead(repeating: &last), consumed: consumed)
        case .needMore(let point): return .needMore(point)
        case .invalid(let error): return .invalid(error)
        }
    }
}

/// Where an earlier parse of a prefix of the same bytes stopped. Opaque: only the parser makes
/// one, so a caller can hand back `.start` or what it was given, never an offset of its own.
package struct HTTPHeadResumePoint: Hashable, Sendable {
    /// Where the scanner was when the bytes ran out.
    enum Phase: Hashable, Sendable {
        /// Somewhere before the field lines; the part is found again from the SPs.
        case requestLine
        case lineStart, name, value
    }

    /// Bytes from the start of the head known to be valid.
    let validated: Int
    let phase: Phase
    /// Field lines begun so far (meaningful in the field-line phases).
    let fieldCount: Int

    /// Nothing parsed yet: the first call for a head.
    package static let start = HTTPHeadResumePoint(validated: 0, phase: .requestLine, fieldCount: 0)

    /// How many bytes were validated: never more than the prefix given, never less on a later
    /// call (tests check both).
    package var validatedByteCount: Int { validated }
}

// MARK: - Scanner

struct RequestHeadScanner {
    enum Outcome {
        case complete(consumed: Int)
        /// The bytes known good and the state after them.
        case needMore(HTTPHeadResumePoint)
        case invalid(HTTPParseError)
    }

    /// Where the scanner is in the grammar; each phase is entered at `i`.
    private enum Phase {
        case leadingLines, method, targetFirst, target, version, lineStart, name, value
    }

    let bytes: UnsafeRawBufferPointer
    let limits: HTTPParserLimits

    private var phase = Phase.leadingLines
    private var i = 0
    private var fieldCount = 0
    private var lineStart = 0

    private(set) var methodStart = 0
    private(set) var methodEnd = 0
    private(set) var targetStart = 0
    private(set) var targetEnd = 0
    private var versionStart = 0
    private(set) var version = HTTPVersion.http1_1
    /// Where the field lines begin and where the blank line ending them begins. The lines
    /// are not recorded one by one (an array per request): `makeHead` splits them again.
    private var fieldsStart = 0
    private var fieldsEnd = 0

    init(bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: Resumption

    /// The resume point for `.needMore` after `validated` bytes.
    private func resumePoint(validated: Int) -> HTTPHeadResumePoint {
        let phase: HTTPHeadResumePoint.Phase
        switch self.phase {
        case .lineStart: phase = .lineStart
        case .name: phase = .name
        case .value: phase = .value
        default: phase = .requestLine
        }
        return HTTPHeadResumePoint(validated: validated, phase: phase, fieldCount: fieldCount)
    }

    /// Rebuilds the position from a point an earlier call returned for a prefix of these bytes.
    /// Returns false (start from the first byte) for `.start`, for a point beyond these bytes,
    /// and inside the leading empty lines, whose scan is bounded anyway.
    mutating func resume(at point: HTTPHeadResumePoint) -> Bool {
        let p = point.validated
        guard p > 0, p <= bytes.count, p < limits.maxHeaderSectionBytes else { return false }

        if point.phase != .requestLine {
            i = p
            fieldCount = point.fieldCount
            // A resumed name already has a byte (the line start is not resumed into `.name`),
            // so any line start before `p` keeps the empty-name check passing.
            lineStart = p - 1
            switch point.phase {
            case .lineStart: phase = .lineStart
            case .name: phase = .name
            default: phase = .value
            }
            return true
        }

        // The request line starts after the leading empty lines, exactly as `run` skips them.
        var requestLineStart = 0
        var empties = 0
        while requestLineStart + 1 < p, empties < limits.maxLeadingEmptyLines,
            bytes[requestLineStart] == HTTPBytes.cr, bytes[requestLineStart + 1] == HTTPBytes.lf
        {
            requestLineStart += 2
            empties += 1
        }
        guard p > requestLineStart else { return false }

        i = p
        methodStart = requestLineStart
        // Inside the request line: the SPs tell the part.
        guard let firstSP = firstIndex(of: HTTPBytes.sp, in: requestLineStart..<p) else {
            phase = .method
            return true
        }
        methodEnd = firstSP
        targetStart = firstSP + 1
        guard p > targetStart else {
            phase = .targetFirst
            return true
        }
        guard let secondSP = firstIndex(of: HTTPBytes.sp, in: targetStart..<p) else {
            phase = .target
            return true
        }
        targetEnd = secondSP
        versionStart = secondSP + 1
        phase = .version
        return true
    }

    private func firstIndex(of byte: UInt8, in range: Range<Int>) -> Int? {
        for k in range where bytes[k] == byte { return k }
        return nil
    }

    // MARK: Scanning

    /// Out of bytes: a head needing byte `needed` would be longer than the section limit if
    /// `needed >= maxHeaderSectionBytes` (431); otherwise wait for more.
    @inline(__always)
    private func outOfBytes(needing needed: Int, validated: Int) -> Outcome {
        needed >= limits.maxHeaderSectionBytes
            ? .invalid(.headerSectionTooLarge(limit: limits.maxHeaderSectionBytes))
            : .needMore(resumePoint(validated: validated))
    }

    /// Validates from the current position to the end of the head.
    mutating func run() -> Outcome {
        // Locals, so the hot loops keep the position in a register rather than in `self`.
        let bytes = self.bytes
        var i = self.i
        defer { self.i = i }
        // Bytes at or beyond the section limit can never belong to an acceptable head.
        let stop = min(bytes.count, max(limits.maxHeaderSectionBytes, 0))
        while true {
            switch phase {
            case .leadingLines:
                // RFC 9112 §2.2: empty lines before the request line are ignored, up to a bound.
                var empties = 0
                while true {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    if b == HTTPBytes.lf { return .invalid(.bareLFBeforeRequestLine) }
                    if b != HTTPBytes.cr { break }
                    guard i + 1 < stop else { return outOfBytes(needing: i + 1, validated: i) }
                    guard bytes[i + 1] == HTTPBytes.lf else {
                        return .invalid(.bareCRBeforeRequestLine)
                    }
                    empties += 1
                    if empties > limits.maxLeadingEmptyLines {
                        return .invalid(.tooManyEmptyLines)
                    }
                    i += 2
                }
                methodStart = i
                phase = .method

            case .method:
                // A token, then exactly one SP (RFC 9112 §3).
                while true {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    if b == HTTPBytes.sp { break }
                    guard HTTPBytes.isTchar(b) else {
                        return .invalid(.invalidByte(b, in: .method))
                    }
                    i += 1
                    // RFC 9112 §3: a method longer than any implemented one answers 501.
                    if i - methodStart > limits.maxMethodLength {
                        return .invalid(.methodTooLong(limit: limits.maxMethodLength))
                    }
                }
                guard i > methodStart else { return .invalid(.emptyMethod) }
                methodEnd = i
                i += 1
                targetStart = i
                phase = .targetFirst

            case .targetFirst:
                // Origin-form, or `*` for OPTIONS (RFC 9112 §3.2); nothing else is served.
                guard i < stop else { return outOfBytes(needing: i, validated: i) }
                let first = bytes[i]
                if first == HTTPBytes.sp {
                    return .invalid(.extraSPAfterMethod)
                }
                if first == HTTPBytes.asterisk {
                    guard methodIs("OPTIONS") else {
                        return .invalid(.asteriskWithoutOptions)
                    }
                } else if first != HTTPBytes.slash {
                    guard HTTPBytes.isTargetByte(first) else {
                        return .invalid(.invalidByte(first, in: .target))
                    }
                    // Absolute-form (`http://host/path`), which a server must accept (RFC 9112
                    // §3.2.2); checked once the target is complete.
                    guard first | 0x20 == UInt8(ascii: "h") else {
                        return .invalid(.targetNotOriginForm)
                    }
                }
                phase = .target

            case .target:
                let isAsterisk = bytes[targetStart] == HTTPBytes.asterisk
                // Whole words of target bytes first, as long as the limit cannot be passed in one.
                while !isAsterisk, i &+ 8 <= stop, i &+ 8 &- targetStart <= limits.maxTargetLength,
                    HTTPBytes.isTargetWord(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                {
                    i &+= 8
                }
                while true {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    if b == HTTPBytes.sp { break }
                    guard HTTPBytes.isTargetByte(b) else {
                        return .invalid(.invalidByte(b, in: .target))
                    }
                    i += 1
                    let length = i - targetStart
                    // Checked per byte so an endless target is refused before its line ends.
                    if length > limits.maxTargetLength {
                        return .invalid(.targetTooLong(limit: limits.maxTargetLength))
                    }
                    if isAsterisk && length > 1 {
                        return .invalid(.asteriskNotAlone)
                    }
                }
                targetEnd = i
                if bytes[targetStart] != HTTPBytes.slash && !isAsterisk && originFormStart() == nil {
                    return .invalid(.targetNotHTTPURI)
                }
                i += 1
                versionStart = i
                phase = .version

            case .version:
                // `HTTP/` DIGIT `.` DIGIT CRLF, nothing else (RFC 9112 §2.3).
                while i - versionStart < 10 {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    let ok: Bool
                    switch i - versionStart {
                    case 0: ok = b == 0x48  // H
                    case 1, 2: ok = b == 0x54  // T
                    case 3: ok = b == 0x50  // P
                    case 4: ok = b == HTTPBytes.slash
                    case 5, 7: ok = b >= 0x30 && b <= 0x39
                    case 6: ok = b == 0x2E  // .
                    case 8:
                        if b == HTTPBytes.lf { return .invalid(.bareLFAfterRequestLine) }
                        ok = b == HTTPBytes.cr
                    default:
                        if b != HTTPBytes.lf { return .invalid(.bareCRInRequestLine) }
                        ok = true
                    }
                    guard ok else {
                        return .invalid(b == HTTPBytes.sp ? .extraSPInRequestLine : .malformedVersion)
                    }
                    i += 1
                }
                let major = Int(bytes[versionStart + 5] &- 0x30)
                let minor = Int(bytes[versionStart + 7] &- 0x30)
                guard major == 1, minor == 0 || minor == 1 else {
                    return .invalid(.versionNotSupported(major: major, minor: minor))
                }
                version = HTTPVersion(major: major, minor: minor)
                fieldsStart = i
                phase = .lineStart

            case .lineStart:
                // A field line, or the empty line that ends the head (RFC 9112 §5).
                lineStart = i
                guard i < stop else { return outOfBytes(needing: i, validated: i) }
                let b0 = bytes[i]
                if b0 == HTTPBytes.cr {
                    guard i + 1 < stop else { return outOfBytes(needing: i + 1, validated: i) }
                    guard bytes[i + 1] == HTTPBytes.lf else {
                        return .invalid(.bareCRAtEndOfHead)
                    }
                    fieldsEnd = i
                    return .complete(consumed: i + 2)
                }
                if b0 == HTTPBytes.lf { return .invalid(.bareLFInHead) }
                if HTTPBytes.isOWS(b0) {
                    // RFC 9112 §5.2: obs-fold is refused; §2.2: so is whitespace before the first field.
                    return .invalid(.obsFold)
                }
                fieldCount += 1
                if fieldCount > limits.maxHeaderCount {
                    return .invalid(.tooManyFields(limit: limits.maxHeaderCount))
                }
                phase = .name

            case .name:
                // A non-empty token immediately followed by ':' (RFC 9112 §5.1).
                while true {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    if b == HTTPBytes.colon { break }
                    guard HTTPBytes.isTchar(b) else {
                        if HTTPBytes.isOWS(b) {
                            return .invalid(.spaceBeforeColon)
                        }
                        if b == HTTPBytes.cr || b == HTTPBytes.lf {
                            return .invalid(.lineWithoutColon)
                        }
                        return .invalid(.invalidByte(b, in: .fieldName))
                    }
                    i += 1
                }
                guard i > lineStart else { return .invalid(.emptyFieldName) }
                i += 1
                phase = .value

            case .value:
                // VCHAR, obs-text, SP, HTAB; CRLF ends it. Whole words of plain bytes first.
                while i &+ 8 <= stop,
                    HTTPBytes.isPlainFieldValueWord(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                {
                    i &+= 8
                }
                while true {
                    guard i < stop else { return outOfBytes(needing: i, validated: i) }
                    let b = bytes[i]
                    if b == HTTPBytes.cr { break }
                    guard HTTPBytes.isFieldValueByte(b) else {
                        if b == HTTPBytes.lf { return .invalid(.bareLFInValue) }
                        return .invalid(.invalidByte(b, in: .fieldValue))
                    }
                    i += 1
                }
                guard i + 1 < stop else { return outOfBytes(needing: i + 1, validated: i) }
                guard bytes[i + 1] == HTTPBytes.lf else {
                    return .invalid(.bareCRInValue)
                }
                i += 2
                phase = .lineStart
            }
        }
    }

    /// Builds the head from the recorded offsets; call only after `run` returned `.complete` from 0.
    func makeHead(repeating last: inout RepeatedFieldLines) -> HTTPRequestHead {
        let lines = UnsafeRawBufferPointer(rebasing: bytes[fieldsStart..<fieldsEnd])
        let fields: [HTTPField]
        if let repeated = last.fields(for: lines) {
            fields = repeated
        } else {
            fields = makeFields()
            last.keep(lines, fields: fields)
        }
        return HTTPRequestHead(
            method: knownMethod() ?? HTTPMethod(rawValue: string(methodStart, methodEnd)),
            target: bytes[targetStart] == HTTPBytes.slash || bytes[targetStart] == HTTPBytes.asterisk
                ? string(targetStart, targetEnd) : absoluteFormAsOriginForm(),
            version: version,
            headers: HTTPHeaders(fields: fields))
    }

    /// The fields of the field lines, in order.
    private func makeFields() -> [HTTPField] {
        var list: [HTTPField] = []
        list.reserveCapacity(fieldCount)
        // The field lines are valid, so each name ends at the line's first colon (a token holds
        // none) and each value at the line's first CR.
        var lineStart = fieldsStart
        while lineStart < fieldsEnd {
            var colon = lineStart
            while bytes[colon] != HTTPBytes.colon { colon += 1 }
            var lineEnd = colon + 1
            while lineEnd &+ 8 <= fieldsEnd,
                !HTTPBytes.hasByte(HTTPBytes.cr, in: bytes.loadUnaligned(fromByteOffset: lineEnd, as: UInt64.self))
            {
                lineEnd &+= 8
            }
            while bytes[lineEnd] != HTTPBytes.cr { lineEnd += 1 }
            let value = trimmingOWS(bytes, (colon + 1)..<lineEnd)
            list.append(HTTPField(name: fieldName(lineStart, colon), value: string(value.lowerBound, value.upperBound)))
            lineStart = lineEnd + 2
        }
        return list
    }

    /// For an absolute-form target, where its path begins (at `/`, `?` or the end) once the
    /// `http://` or `https://` scheme and a non-empty authority are skipped; nil for anything else.
    /// The authority is not compared with `Host`: one server, one origin.
    private func originFormStart() -> Int? {
        var i = targetStart
        for expected in "http".utf8 {
            guard i < targetEnd, bytes[i] | 0x20 == expected else { return nil }
            i += 1
        }
        if i < targetEnd, bytes[i] | 0x20 == UInt8(ascii: "s") { i += 1 }
        for expected in "://".utf8 {
            guard i < targetEnd, bytes[i] == expected else { return nil }
            i += 1
        }
        let authorityStart = i
        while i < targetEnd, bytes[i] != HTTPBytes.slash, bytes[i] != UInt8(ascii: "?") { i += 1 }
        return i > authorityStart ? i : nil
    }

    /// The path and query of an absolute-form target, as origin-form (an empty path is `/`).
    private func absoluteFormAsOriginForm() -> String {
        guard let start = originFormStart() else { return "/" }
        let rest = string(start, targetEnd)
        return rest.hasPrefix("/") ? rest : "/" + rest
    }

    /// Names, methods and targets are ASCII; values may hold obs-text, which becomes U+FFFD
    /// where it is not valid UTF-8.
    private func string(_ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// The method as one of the shared values when it is one (no String made or checked).
    private func knownMethod() -> HTTPMethod? {
        if methodIs("GET") { return .GET }
        if methodIs("POST") { return .POST }
        if methodIs("PUT") { return .PUT }
        if methodIs("DELETE") { return .DELETE }
        if methodIs("PATCH") { return .PATCH }
        if methodIs("HEAD") { return .HEAD }
        return nil
    }

    /// A field name, as the literal of a common one when it is spelled exactly so: no String is
    /// decoded for the names nearly every request sends. Told apart by length first, then one
    /// comparison (a walk over a table of names retained each entry's String: ~200 instructions
    /// a field).
    private func fieldName(_ start: Int, _ end: Int) -> String {
        let sent = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        // Called only where the lengths are equal (the switch below). Two overlapping words
        // cover a name of 8 to 16 bytes: `elementsEqual` walked both byte by byte, ~15
        // instructions a byte (callgrind: `Authorization` cost ~200).
        func spelled(_ literal: StaticString) -> Bool {
            let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            let count = expected.count
            guard count >= 8, count <= 16 else { return sent.elementsEqual(expected) }
            return sent.loadUnaligned(as: UInt64.self) == expected.loadUnaligned(as: UInt64.self)
                && sent.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == expected.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        switch sent.count {
        case 4 where spelled("Host"): return "Host"
        case 6 where spelled("Accept"): return "Accept"
        case 10 where spelled("User-Agent"): return "User-Agent"
        case 10 where spelled("Connection"): return "Connection"
        case 12 where spelled("Content-Type"): return "Content-Type"
        case 12 where spelled("X-Request-Id"): return "X-Request-Id"
        case 13 where spelled("Authorization"): return "Authorization"
        case 14 where spelled("Content-Length"): return "Content-Length"
        case 15 where spelled("Accept-Encoding"): return "Accept-Encoding"
        case 15 where spelled("Idempotency-Key"): return "Idempotency-Key"
        default: return string(start, end)
        }
    }

    private func methodIs(_ name: StaticString) -> Bool {
        guard methodEnd - methodStart == name.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for k in 0..<expected.count where bytes[methodStart + k] != expected[k] { return false }
        return true
    }
}
