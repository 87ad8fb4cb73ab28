// Every reason a request is refused, one named member each, so a test can assert the exact
// reason and not only the status (STYLE example 12: a struct over closed constructors).

/// Why a request could not be read. Each carries the status and envelope code it answers with;
/// after any of these the connection is closed, because the framing can no longer be trusted.
///
/// ```swift
/// if case .invalid(let error) = result, error == .obsFold { … }
/// ```
package struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status of the refusal.
    package let status: HTTPStatus
    /// Stable snake_case code for the envelope (`invalid_request`, `uri_too_long`, …).
    package let code: String
    /// What was wrong, for people.
    package let reason: String

    private init(_ status: HTTPStatus, _ code: String, _ reason: String) {
        self.status = status
        self.code = code
        self.reason = reason
    }

    package var description: String { "\(status.code) \(code): \(reason)" }

    private static func bad(_ reason: String) -> HTTPParseError {
        HTTPParseError(.badRequest, "invalid_request", reason)
    }

    /// Where in the head a refused byte was.
    package enum Part: String, Sendable {
        case method, target = "request target", fieldName = "field name", fieldValue = "field value"
    }

    /// A byte the grammar does not allow in `part`, named by its class (NUL, bare CR, DEL, …).
    package static func invalidByte(_ b: UInt8, in part: Part) -> HTTPParseError {
        let what =
            switch b {
            case 0: "NUL"
            case 0x0D: "bare CR"
            case 0x0A: "bare LF"
            case 0x20: "space"
            case 0x7F: "DEL"
            case 0x80...: "non-ASCII byte"
            case ..<0x20: "control character"
            default: "invalid character"
            }
        return bad("\(what) in \(part.rawValue)")
    }

    // MARK: - Request line (RFC 9112 §2.2, §3)

    package static let bareLFBeforeRequestLine = bad("bare LF before the request line")
    package static let bareCRBeforeRequestLine = bad("bare CR before the request line")
    package static let tooManyEmptyLines = bad("too many empty lines before the request line")
    package static let emptyMethod = bad("empty method")
    package static let extraSPAfterMethod = bad("more than one SP after the method")
    package static let extraSPInRequestLine = bad("more than one SP in the request line")
    package static let asteriskWithoutOptions = bad("asterisk-form target is only allowed with OPTIONS")
    package static let asteriskNotAlone = bad("asterisk-form target must be exactly '*'")
    package static let targetNotOriginForm = bad("request target must be origin-form (start with '/')")
    package static let targetNotHTTPURI = bad("request target must be origin-form or an http(s) absolute-form URI")
    package static let malformedVersion = bad("malformed HTTP version")
    package static let bareLFAfterRequestLine = bad("bare LF after the request line")
    package static let bareCRInRequestLine = bad("bare CR in the request line")

    /// 501: a method longer than any implemented one (RFC 9112 §3).
    package static func methodTooLong(limit: Int) -> HTTPParseError {
        HTTPParseError(.notImplemented, "not_implemented", "method longer than \(limit) bytes")
    }

    /// 414 `uri_too_long`: the request target is longer than `maxTargetLength`.
    package static func targetTooLong(limit: Int) -> HTTPParseError {
        HTTPParseError(.uriTooLong, "uri_too_long", "request target exceeds \(limit) bytes")
    }

    /// 505: a well-formed version other than 1.0 and 1.1.
    package static func versionNotSupported(major: Int, minor: Int) -> HTTPParseError {
        HTTPParseError(
            .httpVersionNotSupported, "http_version_not_supported", "HTTP/\(major).\(minor) is not supported")
    }

    // MARK: - Field lines (RFC 9112 §5)

    package static let bareCRAtEndOfHead = bad("bare CR at the end of the header section")
    package static let bareLFInHead = bad("bare LF in the header section")
    package static let obsFold = bad("obsolete line folding (line starts with whitespace)")
    package static let spaceBeforeColon = bad("whitespace between field name and colon")
    package static let lineWithoutColon = bad("header line without a colon")
    package static let emptyFieldName = bad("empty field name")
    package static let bareLFInValue = bad("bare LF in a field value")
    package static let bareCRInValue = bad("bare CR in a field value")

    /// 431: the head is longer than `maxHeaderSectionBytes`.
    package static func headerSectionTooLarge(limit: Int) -> HTTPParseError {
        HTTPParseError(.headersTooLarge, "headers_too_large", "header section exceeds \(limit) bytes")
    }

    /// 431: more than `maxHeaderCount` field lines.
    package static func tooManyFields(limit: Int) -> HTTPParseError {
        HTTPParseError(.headersTooLarge, "headers_too_large", "more than \(limit) header fields")
    }

    // MARK: - Host (RFC 9112 §3.2) and framing (RFC 9112 §6)

    package static let missingHost = bad("HTTP/1.1 request without a Host field")
    package static let repeatedHost = bad("more than one Host field")
    package static let invalidHost = bad("Host is not host [\":\" port] (RFC 3986)")
    package static let lengthAndChunked = bad("both Transfer-Encoding and Content-Length")
    package static let transferEncodingInHTTP10 = bad("Transfer-Encoding in an HTTP/1.0 request")
    package static let emptyTransferEncoding = bad("empty Transfer-Encoding")
    package static let chunkedNotFinal = bad("chunked is not the final transfer coding")
    package static let chunkedTwice = bad("chunked applied more than once")
    package static let invalidContentLength = bad("Content-Length is not a non-negative decimal integer")
    package static let differingContentLengths = bad("differing Content-Length values")

    /// 501 `not_implemented`: a transfer coding other than `chunked`.
    package static func unsupportedTransferCoding(_ coding: String) -> HTTPParseError {
        HTTPParseError(.notImplemented, "not_implemented", "transfer coding '\(coding)' is not supported")
    }

    /// 413: the body, as declared (`Content-Length`, one chunk's size) or as read, is over the limit.
    package static let payloadTooLarge = HTTPParseError(
        .payloadTooLarge, "payload_too_large", "request body too large")

    // MARK: - Chunked body (RFC 9112 §7.1)

    package static let chunkSizeTooManyDigits = bad("chunk size has too many digits")
    package static let chunkSizeOverflow = bad("chunk size overflows")
    package static let chunkSizeNotHex = bad("chunk size must start with a hex digit")
    package static let bareLFAfterChunkSize = bad("bare LF after chunk size")
    package static let bareCRAfterChunkSize = bad("bare CR after chunk size")
    package static let invalidAfterChunkSize = bad("invalid character after chunk size")
    package static let bareLFInChunkExtension = bad("bare LF in chunk extension")
    package static let controlInChunkExtension = bad("control character in chunk extension")
    package static let chunkExtensionTooLong = bad("chunk extensions too long")
    package static let missingCRLFAfterChunkData = bad("missing CRLF after chunk data")
    package static let obsFoldInTrailer = bad("obsolete line folding in trailer")
    package static let bareLFInTrailer = bad("bare LF in trailer")
    package static let bareCRInTrailer = bad("bare CR in trailer")
    package static let invalidTrailerName = bad("invalid trailer field name")
    package static let spaceBeforeColonInTrailer = bad("whitespace between trailer name and colon")
    package static let controlInTrailer = bad("control character in trailer")
    package static let bareCRAtEndOfBody = bad("bare CR at the end of the chunked body")

    /// 431: the trailer section is longer than `maxTrailerBytes`.
    package static func trailerTooLarge(limit: Int) -> HTTPParseError {
        HTTPParseError(.headersTooLarge, "headers_too_large", "trailer section exceeds \(limit) bytes")
    }

    // MARK: - Refusals of the connection, not of the bytes

    /// 408: the head and body did not arrive within the header timeout.
    package static let requestTimeout = HTTPParseError(
        .requestTimeout, "request_timeout", "request not received in time")
    /// 415: a request `Content-Encoding` other than gzip and identity.
    package static let unsupportedContentCoding = HTTPParseError(
        .unsupportedMediaType, "unsupported_media_type", "only gzip and identity content codings are accepted")
    /// 400: a body sent as gzip that does not inflate.
    package static let corruptGzip = bad("request body is not valid gzip")
    /// 503: the server is at its connection limit.
    package static let tooManyConnections = HTTPParseError(
        .serviceUnavailable, "unavailable", "too many connections")
}
