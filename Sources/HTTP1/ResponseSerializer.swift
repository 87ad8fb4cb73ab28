import StringBytes

// Response serialisation (RFC 9112 §4, §6): the status line, the fields, the framing fields the
// server owns (Content-Length, Connection, Date, Content-Encoding), the blank line, the body.
// Every response the server writes goes through `serializeResponse`, the 503 refusal included.

/// How one response is framed on the wire: what the connection decided for it.
package struct HTTPResponseFraming: Hashable, Sendable {
    /// The request's version: a 1.0 client only keeps the connection if told (RFC 9112 §9.3).
    package var requestVersion: HTTPVersion
    /// A response to HEAD: the fields a GET would get, no body (RFC 9110 §9.3.2).
    package var isHead: Bool
    /// The connection closes after this response: `Connection: close`.
    package var closing: Bool
    /// The body given is gzip-encoded: `Content-Encoding: gzip` and `Vary: Accept-Encoding`.
    package var gzip: Bool

    /// A framing; the connection state machine makes these, tests compare them.
    package init(requestVersion: HTTPVersion, isHead: Bool, closing: Bool, gzip: Bool) {
        self.requestVersion = requestVersion
        self.isHead = isHead
        self.closing = closing
        self.gzip = gzip
    }

    /// A response sent outside any request (the connection-limit refusal): 1.1, then close.
    package static let refusal = HTTPResponseFraming(
        requestVersion: .http1_1, isHead: false, closing: true, gzip: false)
}

extension HTTPStatus {
    /// Whether the status allows content: not 1xx, 204 or 304 (RFC 9110 §6.4.1, §15.3.5, §15.4.5).
    package var allowsContent: Bool {
        !(100..<200).contains(code) && code != 204 && code != 304
    }
}

/// The interim response of RFC 9110 §10.1.1 (`Expect: 100-continue`).
package let continueResponseBytes: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

/// Serialises a whole response into `output`: the response's own fields minus the framing ones,
/// then `Content-Length` (the GET length for HEAD), `Date` unless given, `Connection`, the body.
///
/// - Parameters:
///   - body: the content, already gzip-encoded when `framing.gzip` is set.
///   - date: the IMF-fixdate for `Date` (RFC 9110 §6.6.1), of our own making (the server's
///     date cache): written as it is, not sanitised like the response's fields.
///
/// ```swift
/// serializeResponse(status: .ok, headers: [:], body: Array("hi".utf8), framing: framing, date: date, into: &out)
/// // "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: …\r\n\r\nhi"
/// ```
package func serializeResponse(
    status: HTTPStatus, headers: HTTPHeaders, body: [UInt8], framing: HTTPResponseFraming, date: String,
    into output: inout [UInt8]
) {
    let code = status.code
    // RFC 9110 §8.6: no Content-Length (and no body) on 1xx and 204; 304 keeps what it has.
    let bodyless = (100..<200).contains(code) || code == 204
    let writesBody = !bodyless && !framing.isHead
    let writesLength = !bodyless && code != 304
    // First pass: what the head holds and how long it is. The response's own fields are
    // written minus the framing ones we set ourselves.
    var hasDate = false
    var variesByEncoding = false
    var length =
        Head.version.utf8CodeUnitCount + decimalLength(code) + 1 + status.reasonPhrase.utf8CodeUnitCount
        + 2 * Head.crlf.utf8CodeUnitCount
    // By index, not `for field in`: binding each field would retain and release its strings.
    let fields = headers.fields
    for i in fields.indices {
        if fields[i].isClean {
            assert(FramingField(name: fields[i].name) == .other, "a framing field is never clean: it is ours")
            length += fields[i].name.utf8.count + 2 + fields[i].value.utf8.count + 2
            continue
        }
        switch FramingField(name: fields[i].name) {
        case .contentLength, .transferEncoding, .connection:
            continue
        case .date:
            hasDate = true
        case .vary:
            if framing.gzip, HTTPHeaders.list(fields[i].value, containsToken: "accept-encoding") {
                variesByEncoding = true
            }
        case .other:
            break
        }
        length += fields[i].name.utf8.count + 2 + fields[i].value.utf8.count + 2
    }
    let gzipFields = framing.gzip && !bodyless
    if gzipFields {
        length += Head.contentEncodingGzip.utf8CodeUnitCount
        if !variesByEncoding { length += Head.varyAcceptEncoding.utf8CodeUnitCount }
    }
    if writesLength {
        length += Head.contentLength.utf8CodeUnitCount + decimalLength(body.count) + Head.crlf.utf8CodeUnitCount
    }
    if !hasDate { length += Head.date.utf8CodeUnitCount + date.utf8.count + Head.crlf.utf8CodeUnitCount }
    if framing.closing {
        length += Head.connectionClose.utf8CodeUnitCount
    } else if framing.requestVersion == .http1_0 {
        length += Head.connectionKeepAlive.utf8CodeUnitCount
    }

    // Second pass: the head written in place, then appended with the body: two copies into
    // `output` instead of one `Array.append` per piece (~80 instructions each).
    output.reserveCapacity(output.count + length + (writesBody ? body.count : 0))
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { room in
        var head = HeadWriter(room)
        head.literal(Head.version)
        head.decimal(code)
        head.byte(HTTPBytes.sp)
        head.literal(status.reasonPhrase)
        head.literal(Head.crlf)
        for i in fields.indices {
            if fields[i].isClean {
                head.cleanField(fields[i].name, fields[i].value)
                continue
            }
            switch FramingField(name: fields[i].name) {
            case .contentLength, .transferEncoding, .connection: continue
            default: head.field(fields[i].name, fields[i].value)
            }
        }
        // The fields below are ours: names and values known clean.
        if gzipFields {
            head.literal(Head.contentEncodingGzip)
            if !variesByEncoding { head.literal(Head.varyAcceptEncoding) }
        }
        if writesLength {
            // For HEAD this is the length the GET body would have had (RFC 9110 §9.3.2).
            head.literal(Head.contentLength)
            head.decimal(body.count)
            head.literal(Head.crlf)
        }
        if !hasDate {
            head.literal(Head.date)
            head.copied(date)
            head.literal(Head.crlf)
        }
        if framing.closing {
            head.literal(Head.connectionClose)
        } else if framing.requestVersion == .http1_0 {
            // RFC 9112 §9.3: a 1.0 client only keeps the connection if we say so.
            head.literal(Head.connectionKeepAlive)
        }
        head.literal(Head.crlf)
        assert(head.count == length, "response head length miscounted")
        output.append(contentsOf: UnsafeBufferPointer(rebasing: room[..<head.count]))
    }
    if writesBody { output.append(contentsOf: body) }
}

/// The fixed text of a head: named, so the first pass counts exactly what the second writes.
private enum Head {
    static let version: StaticString = "HTTP/1.1 "
    static let crlf: StaticString = "\r\n"
    static let contentEncodingGzip: StaticString = "Content-Encoding: gzip\r\n"
    static let varyAcceptEncoding: StaticString = "Vary: Accept-Encoding\r\n"
    static let contentLength: StaticString = "Content-Length: "
    static let date: StaticString = "Date: "
    static let connectionClose: StaticString = "Connection: close\r\n"
    static let connectionKeepAlive: StaticString = "Connection: keep-alive\r\n"
}

/// The response fields the serializer owns or looks at, told apart by length first: one
/// switch per field instead of five case-insensitive comparisons.
private enum FramingField {
    case contentLength, transferEncoding, connection, date, vary, other

    init(name: String) {
        func named(_ literal: StaticString, _ kind: FramingField) -> FramingField {
            HTTPHeaders.namesEqual(name, literal) ? kind : .other
        }
        switch name.utf8.count {
        case 14: self = named("Content-Length", .contentLength)
        case 17: self = named("Transfer-Encoding", .transferEncoding)
        case 10: self = named("Connection", .connection)
        case 4:
            let date = named("Date", .date)
            self = date == .other ? named("Vary", .vary) : date
        default: self = .other
        }
    }
}

/// Digits of a non-negative decimal.
private func decimalLength(_ value: Int) -> Int {
    var n = max(value, 0) / 10
    var digits = 1
    while n > 0 {
        digits += 1
        n /= 10
    }
    return digits
}

/// Writes a response head into memory sized for it beforehand (`serializeResponse`'s first
/// pass). Every write checks the room left: a miscount stops the process rather than writing
/// past the buffer.
private struct HeadWriter {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    var count = 0

    init(_ room: UnsafeMutableBufferPointer<UInt8>) {
        base = room.baseAddress!
        capacity = room.count
    }

    private func makeRoom(_ n: Int) {
        precondition(n <= capacity - count, "response head longer than counted")
    }

    mutating func byte(_ b: UInt8) {
        makeRoom(1)
        base[count] = b
        count += 1
    }

    /// Bytes of our own, known clean.
    mutating func literal(_ text: StaticString) {
        makeRoom(text.utf8CodeUnitCount)
        (base + count).initialize(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count += text.utf8CodeUnitCount
    }

    mutating func decimal(_ value: Int) {
        let digits = decimalLength(value)
        makeRoom(digits)
        var n = UInt(max(value, 0))
        for i in stride(from: count + digits - 1, through: count, by: -1) {
            base[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: n % 10)
            n /= 10
        }
        count += digits
    }

    /// `Name: value\r\n`, sanitised like every field taken from elsewhere.
    mutating func field(_ name: String, _ value: String) {
        sanitized(name)
        byte(HTTPBytes.colon)
        byte(HTTPBytes.sp)
        sanitized(value)
        byte(HTTPBytes.cr)
        byte(HTTPBytes.lf)
    }

    /// `Name: value\r\n` of a field made clean (`HTTPField(cleanName:value:)`): copied as it is
    /// (debug builds check that nothing in it would have been sanitised).
    mutating func cleanField(_ name: String, _ value: String) {
        let start = count
        copied(name)
        byte(HTTPBytes.colon)
        byte(HTTPBytes.sp)
        copied(value)
        assert(
            !UnsafeBufferPointer(start: base + start, count: count - start).contains(where: Self.endsLine),
            "a clean field holds a line break or NUL")
        byte(HTTPBytes.cr)
        byte(HTTPBytes.lf)
    }

    /// The UTF-8 of `text` as it is: text of our own, known clean (the date).
    mutating func copied(_ text: String) {
        count += copy(text)
    }

    /// The UTF-8 of `text`, with CR, LF and NUL written as SP: a value taken from a request
    /// must never end the line it is written on (response splitting).
    private mutating func sanitized(_ text: String) {
        let start = base + count
        let n = copy(text)
        count += n
        // Eight bytes at a time: a word with no byte below 14 has none of the three.
        var i = 0
        while i + 8 <= n {
            let word = UnsafeRawPointer(start + i).loadUnaligned(as: UInt64.self)
            if HTTPBytes.hasByte(below: 0x0E, in: word) { blank(start + i, 8) }
            i += 8
        }
        blank(start + i, n - i)
    }

    /// Copies the UTF-8 of `text` to the write position; returns its length (not yet counted).
    private func copy(_ text: String) -> Int {
        withUTF8Bytes(text) { bytes in
            guard let source = bytes.baseAddress else { return 0 }
            makeRoom(bytes.count)
            (base + count).initialize(from: source, count: bytes.count)
            return bytes.count
        }
    }

    private func blank(_ bytes: UnsafeMutablePointer<UInt8>, _ n: Int) {
        for j in 0..<n where Self.endsLine(bytes[j]) {
            bytes[j] = HTTPBytes.sp
        }
    }

    /// CR, LF or NUL: what a field's name or value must never carry onto the wire.
    private static func endsLine(_ byte: UInt8) -> Bool {
        byte == HTTPBytes.cr || byte == HTTPBytes.lf || byte == 0
    }
}
