// Interface of the request-head parser and the chunked decoder. Implementations pending.

/// The outcome of one parse attempt over the bytes received so far.
package enum HTTPHeadParseResult: Sendable {
    /// A whole head; `consumed` bytes of the buffer belong to it (through the blank line).
    case complete(HTTPRequestHead, consumed: Int)
    /// Not enough bytes yet. `scanned` may be passed back to resume without rescanning.
    case needMore(scanned: Int)
    case invalid(HTTPParseError)
}

/// Parses a request head from the start of `buffer`.
/// - Parameters:
///   - buffer: bytes received so far on the connection, starting at a request.
///   - limits: target, header section and field count limits.
///   - scanned: how many bytes an earlier call already looked at (0 the first time).
package func parseRequestHead(
    _ buffer: UnsafeRawBufferPointer, limits: HTTPParserLimits, scanned: Int = 0
) -> HTTPHeadParseResult {
    fatalError("pending")
}

/// Decides the body framing of a parsed head, refusing whatever could be read two ways.
/// Unknown transfer codings answer 501 `not_implemented`; a body-carrying method without a length
/// is `.none` (RFC 9112 §6.3: a request with neither field has no body).
package func bodyFraming(of head: HTTPRequestHead) -> Result<HTTPBodyFraming, HTTPParseError> {
    fatalError("pending")
}

/// Incremental decoder of a chunked body (RFC 9112 §7.1). Feed it bytes as they arrive.
package struct ChunkedBodyDecoder: Sendable {
    package enum Step: Sendable {
        /// `consumed` bytes were used; `data` ranges of the input are body bytes, in order.
        case progress(consumed: Int, data: [Range<Int>])
        /// The last chunk and trailers were read; `consumed` bytes through the final CRLF.
        case done(consumed: Int, data: [Range<Int>])
        case invalid(HTTPParseError)
    }
    package init(maxTrailerBytes: Int = 8 * 1024) {}

    package mutating func decode(_ input: UnsafeRawBufferPointer) -> Step {
        fatalError("pending")
    }
}

/// Serialises a response head: status line, headers, blank line.
package func serializeResponseHead(
    version: HTTPVersion, status: HTTPStatus, headers: HTTPHeaders, into buffer: inout [UInt8]
) {
    fatalError("pending")
}
