// Response head serialisation (RFC 9112 §4): `HTTP/1.1 200 OK\r\n`, fields, blank line.

func serializeResponseHeadImpl(
    version: HTTPVersion, status: HTTPStatus, headers: HTTPHeaders, into buffer: inout [UInt8]
) {
    buffer.reserveCapacity(buffer.count + 32 + headers.count * 40)
    appendStatusLine(version: version, status: status, to: &buffer)
    for field in headers { appendHeaderField(name: field.name, value: field.value, to: &buffer) }
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// `HTTP/1.1 200 OK\r\n`.
package func appendStatusLine(version: HTTPVersion, status: HTTPStatus, to buffer: inout [UInt8]) {
    if version == .http1_1 {
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)  // the only version we answer with: no number formatting
    } else {
        buffer.append(contentsOf: "HTTP/".utf8)
        buffer.append(contentsOf: String(version.major).utf8)
        buffer.append(0x2E)
        buffer.append(contentsOf: String(version.minor).utf8)
        buffer.append(HTTPBytes.sp)
    }
    buffer.append(contentsOf: String(status.code).utf8)  // a small String: no allocation
    buffer.append(HTTPBytes.sp)
    buffer.append(contentsOf: status.reasonPhrase.utf8)
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// `Name: value\r\n`, sanitised like every field we write.
package func appendHeaderField(name: String, value: String, to buffer: inout [UInt8]) {
    appendSanitized(name, to: &buffer)
    buffer.append(HTTPBytes.colon)
    buffer.append(HTTPBytes.sp)
    appendSanitized(value, to: &buffer)
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// Appends the UTF-8 of `s`, with CR, LF and NUL written as SP: a value taken from a request
/// must never end the line it is written on (response splitting).
private func appendSanitized(_ s: String, to buffer: inout [UInt8]) {
    var s = s
    s.withUTF8 { bytes in
        // Nearly every value is clean: one scan, then one bulk copy instead of a per-byte append.
        if !bytes.contains(where: { $0 == HTTPBytes.cr || $0 == HTTPBytes.lf || $0 == 0 }) {
            buffer.append(contentsOf: bytes)
            return
        }
        for b in bytes {
            buffer.append(b == HTTPBytes.cr || b == HTTPBytes.lf || b == 0 ? HTTPBytes.sp : b)
        }
    }
}
