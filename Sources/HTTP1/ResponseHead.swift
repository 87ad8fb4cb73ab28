// Response head serialisation (RFC 9112 §4): `HTTP/1.1 200 OK\r\n`, fields, blank line.

func serializeResponseHeadImpl(
    version: HTTPVersion, status: HTTPStatus, headers: HTTPHeaders, into buffer: inout [UInt8]
) {
    buffer.reserveCapacity(buffer.count + 32 + headers.count * 40)
    buffer.append(contentsOf: "HTTP/".utf8)
    buffer.append(contentsOf: String(version.major).utf8)
    buffer.append(0x2E)
    buffer.append(contentsOf: String(version.minor).utf8)
    buffer.append(HTTPBytes.sp)
    buffer.append(contentsOf: String(status.code).utf8)
    buffer.append(HTTPBytes.sp)
    buffer.append(contentsOf: status.reasonPhrase.utf8)
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
    for field in headers {
        appendSanitized(field.name, to: &buffer)
        buffer.append(HTTPBytes.colon)
        buffer.append(HTTPBytes.sp)
        appendSanitized(field.value, to: &buffer)
        buffer.append(HTTPBytes.cr)
        buffer.append(HTTPBytes.lf)
    }
    buffer.append(HTTPBytes.cr)
    buffer.append(HTTPBytes.lf)
}

/// Appends the UTF-8 of `s`, with CR, LF and NUL written as SP: a value taken from a request
/// must never end the line it is written on (response splitting).
private func appendSanitized(_ s: String, to buffer: inout [UInt8]) {
    for b in s.utf8 {
        buffer.append(b == HTTPBytes.cr || b == HTTPBytes.lf || b == 0 ? HTTPBytes.sp : b)
    }
}
