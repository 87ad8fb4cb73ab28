#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    var unused = RepeatedFieldLines()
    return parseRequestHeadImpl(buffer, limits: limits, resumingFrom: point, repeating: &unused)
}

/// `parseRequestHead` for the heads of one connection: `last` holds the field lines of its last
/// head (empty at first), and a head whose field lines are the same bytes takes the fields made
/// for them instead of making them again; else its own become `last`. What a head parses to
/// is the same either way.
package func parseRequestHead(
    _ buffer: UnsafeRawBufferPointer, limits: HTTPParserLimits, resumingFrom point: HTTPHeadResumePoint,
    repeating last: inout RepeatedFieldLines
) -> HTTPHeadParseResult {
    parseRequestHeadImpl(buffer, limits: limits, resumingFrom: point, repeating: &last)
}

/// The field lines of a connection's last head, as sent and as the fields made from them.
///
/// A client on a kept-alive connection mostly sends the same fields every request (`Host`, its
/// `Authorization`, `User-Agent`): a `memcmp` of the lines tells so, and the fields (their
/// array, and a `String` for each value over 15 bytes) are shared instead of made and freed
/// again (~500 instructions of a cached GET, callgrind). Lines over `maxBytes` are not kept,
/// so an idle connection holds at most that and its fields.
package struct RepeatedFieldLines: Sendable {
    /// The longest field section kept.
    static let maxBytes = 1024
    /// Kept with its capacity: lines that change each request are copied into the same room.
    /// Empty at first, which is right as it is: no lines make no fields.
    var bytes: [UInt8] = []
    var fields: [HTTPField] = []

    package init() {}

    /// The fields made earlier for exactly these lines, if they are the last head's.
    func fields(for lines: UnsafeRawBufferPointer) -> [HTTPField]? {
        guard lines.count == bytes.count else { return nil }
        let same = bytes.withUnsafeBytes { kept in
            lines.isEmpty || memcmp(kept.baseAddress!, lines.baseAddress!, lines.count) == 0
        }
        return same ? fields : nil
    }

    /// Keeps `lines` and the fields made from them, or forgets the last ones when they are too long.
    mutating func keep(_ lines: UnsafeRawBufferPointer, fields: [HTTPField]) {
        guard lines.count <= Self.maxBytes else {
            self = RepeatedFieldLines()
            return
        }
        bytes.replaceSubrange(bytes.startIndex..<bytes.endIndex, with: lines)
        self.fields = fields
    }
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
