// Entry points of the wire format: request head and body framing. Implementations live in
// RequestHeadParser.swift and BodyFraming.swift; chunked decoding in ChunkedBodyDecoder.swift,
// the response serializer in ResponseHead.swift.

/// The outcome of one parse attempt over the bytes received so far.
package enum HTTPHeadParseResult: Sendable {
    /// A whole head; `consumed` bytes of the buffer belong to it (through the blank line).
    case complete(HTTPRequestHead, consumed: Int)
    /// Not enough bytes yet. Pass the point back, with the same bytes and more, to resume
    /// without rescanning.
    case needMore(HTTPHeadResumePoint)
    case invalid(HTTPParseError)
}

/// Parses a request head from the start of `buffer`.
///
/// Errors are reported as soon as the bytes so far prove them (a target over the limit, a bare
/// LF, a section over `maxHeaderSectionBytes`), so a caller never buffers more than the limits.
/// Bytes after the head (a body, a pipelined request) are left alone.
///
/// - Parameters:
///   - buffer: bytes received so far on the connection, starting at a request.
///   - limits: target, header section and field count limits.
///   - point: `.start` the first time (and after a head was consumed), else the point of the
///     last `.needMore` for a prefix of the same bytes.
///
/// ```swift
/// switch buffer.withUnsafeBytes({ parseRequestHead($0, limits: limits, resumingFrom: point) }) {
/// case .complete(let head, let consumed): handle(head); buffer.removeFirst(consumed)
/// case .needMore(let next): point = next  // read more, then call again
/// case .invalid(let error): respond(error.status, error.code); close()
/// }
/// ```
package func parseRequestHead(
    _ buffer: UnsafeRawBufferPointer, limits: HTTPParserLimits, resumingFrom point: HTTPHeadResumePoint = .start
) -> HTTPHeadParseResult {
    parseRequestHeadImpl(buffer, limits: limits, resumingFrom: point)
}

/// Decides the body framing of a parsed head, refusing whatever could be read two ways.
/// Unknown transfer codings answer 501 `not_implemented`; a body-carrying method without a length
/// is `.none` (RFC 9112 §6.3: a request with neither field has no body).
///
/// Also checks `Host` (RFC 9112 §3.2): an HTTP/1.1 request needs exactly one, any request at
/// most one, and its value must be `host [":" port]` (RFC 3986). Repeated `Content-Length` values that are all equal (`5, 5`) count as one
/// (RFC 9112 §6.3 item 5); any difference is 400.
package func bodyFraming(of head: HTTPRequestHead) -> Result<HTTPBodyFraming, HTTPParseError> {
    var validHost: String?
    return bodyFramingImpl(of: head, validHost: &validHost)
}

/// `bodyFraming(of:)` for the heads of one connection: `validHost` is a `Host` value already
/// found valid (nil at first), compared rather than parsed again, and becomes this head's valid
/// one. Parsing it was ~300 instructions of a `/healthz` (callgrind).
package func bodyFraming(
    of head: HTTPRequestHead, validHost: inout String?
) -> Result<HTTPBodyFraming, HTTPParseError> {
    bodyFramingImpl(of: head, validHost: &validHost)
}
