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
///   - date: the IMF-fixdate for `Date` (RFC 9110 §6.6.1).
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
    output.reserveCapacity(output.count + 256 + (writesBody ? body.count : 0))
    appendStatusLine(status, to: &output)
    var hasDate = false
    var variesByEncoding = false
    // The response's own fields are written straight into the output, minus the framing ones
    // we set ourselves; the headers array is never copied or edited per request.
    for field in headers {
        switch FramingField(name: field.name) {
        case .contentLength, .transferEncoding, .connection:
            continue
        case .date:
            hasDate = true
        case .vary:
            if framing.gzip, HTTPHeaders.list(field.value, containsToken: "accept-encoding") { variesByEncoding = true }
        case .other:
            break
        }
        appendHeaderField(name: field.name, value: field.value, to: &output)
    }
    // The fields below are ours: names and values known clean, so appended without the scan.
    if framing.gzip && !bodyless {
        appendLiteral("Content-Encoding: gzip\r\n", to: &output)
        if !variesByEncoding { appendLiteral("Vary: Accept-Encoding\r\n", to: &output) }
    }
    if !bodyless && code != 304 {
        // For HEAD this is the length the GET body would have had (RFC 9110 §9.3.2).
        appendLiteral("Content-Length: ", to: &output)
        appendDecimal(body.count, to: &output)
        appendLiteral("\r\n", to: &output)
    }
    if !hasDate {
        appendLiteral("Date: ", to: &output)
        appendSanitized(date, to: &output)
        appendLiteral("\r\n", to: &output)
    }
    if framing.closing {
        appendLiteral("Connection: close\r\n", to: &output)
    } else if framing.requestVersion == .http1_0 {
        // RFC 9112 §9.3: a 1.0 client only keeps the connection if we say so.
        appendLiteral("Connection: keep-alive\r\n", to: &output)
    }
    output.append(HTTPBytes.cr)
    output.append(HTTPBytes.lf)
    if writesBody { output.append(contentsOf: body) }
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

/// `HTTP/1.1 200 OK\r\n`: we answer every request as 1.1, its highest version (RFC 9110 §6.2).
func appendStatusLine(_ status: HTTPStatus, to buffer: inout [UInt8]) {
    appendLiteral("HTTP/1.1 ", to: &buffer)
    appendDecimal(status.code, to: &buffer)
    buffer.append(HTTPBytes.sp)
    appendLiteral(status.reasonPhrase, to: &buffer)
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// `Name: value\r\n`, sanitised like every field we write.
func appendHeaderField(name: String, value: String, to buffer: inout [UInt8]) {
    appendSanitized(name, to: &buffer)
    buffer.append(HTTPBytes.colon)
    buffer.append(HTTPBytes.sp)
    appendSanitized(value, to: &buffer)
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// Bytes of our own, known clean: one bulk copy.
@inline(__always)
private func appendLiteral(_ literal: StaticString, to buffer: inout [UInt8]) {
    buffer.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
}

/// A non-negative decimal, written without making a String.
private func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for Int.max's 19 digits
    withUnsafeMutableBytes(of: &digits) { room in
        var n = UInt(max(value, 0))
        var start = room.count
        repeat {
            start -= 1
            room[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: n % 10)
            n /= 10
        } while n > 0
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: room[start...]))
    }
}

/// Appends the UTF-8 of `s`, with CR, LF and NUL written as SP: a value taken from a request
/// must never end the line it is written on (response splitting).
private func appendSanitized(_ s: String, to buffer: inout [UInt8]) {
    var s = s
    s.withUTF8 { bytes in
        // Nearly every value is clean: one scan, then one bulk copy instead of a per-byte append.
        var clean = true
        for b in bytes where b <= HTTPBytes.cr && (b == HTTPBytes.cr || b == HTTPBytes.lf || b == 0) {
            clean = false
            break
        }
        if clean {
            buffer.append(contentsOf: bytes)
            return
        }
        for b in bytes {
            buffer.append(b == HTTPBytes.cr || b == HTTPBytes.lf || b == 0 ? HTTPBytes.sp : b)
        }
    }
}
