// The parse errors that are not plain 400s, each with its status and envelope code (API.md §2).

extension HTTPParseError {
    /// 414 `uri_too_long`: the request target is longer than `maxTargetLength`.
    package static func uriTooLong(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .uriTooLong, code: "uri_too_long", reason: reason)
    }

    /// 431 `headers_too_large`: too many header bytes or fields (or trailer bytes).
    package static func headersTooLarge(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .headersTooLarge, code: "headers_too_large", reason: reason)
    }

    /// 501 `not_implemented`: a transfer coding other than `chunked`.
    package static func notImplemented(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .notImplemented, code: "not_implemented", reason: reason)
    }

    /// 505 `http_version_not_supported`: a well-formed version other than 1.0 and 1.1.
    package static func versionNotSupported(_ reason: String) -> HTTPParseError {
        HTTPParseError(
            status: .httpVersionNotSupported, code: "http_version_not_supported", reason: reason)
    }
}
