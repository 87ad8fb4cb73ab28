// Incremental chunked-body decoder (RFC 9112 §7.1). Model: picohttpparser's `phr_decode_chunked`,
// except that data is not moved: the decoder reports which ranges of the input are body bytes.
//
//   chunked-body = *chunk last-chunk trailer-section CRLF
//   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   last-chunk   = 1*("0") [ chunk-ext ] CRLF
//
// Stricter than the grammar: no whitespace around the size (no BWS before `;`), CRLF only.
// Extensions are skipped but bounded per line; trailers are checked, bounded and discarded.

/// Incremental decoder of a chunked body (RFC 9112 §7.1). Feed it bytes as they arrive.
///
/// ```swift
/// var decoder = ChunkedBodyDecoder()
/// switch input.withUnsafeBytes({ decoder.decode($0) }) {
/// case .progress(let consumed, let data): append(data); drop(consumed)  // wait for more
/// case .done(let consumed, let data): append(data); drop(consumed)      // body complete
/// case .invalid(let error): respond(error); close()
/// }
/// ```
package struct ChunkedBodyDecoder: Sendable {
    package enum Step: Sendable {
        /// `consumed` bytes were used; `data` ranges of the input are body bytes, in order.
        case progress(consumed: Int, data: [Range<Int>])
        /// The last chunk and trailers were read; `consumed` bytes through the final CRLF.
        case done(consumed: Int, data: [Range<Int>])
        case invalid(HTTPParseError)
    }

    private enum State: Sendable {
        case size  // hex digits of chunk-size
        case sizeExtension  // after ';', until CR
        case sizeLF  // CR seen at the end of the size line
        case data  // `remaining` bytes of chunk-data
        case dataCR  // CRLF after chunk-data
        case dataLF
        case trailerLineStart  // a trailer field or the final CRLF
        case trailerName
        case trailerValue
        case trailerLF
        case finalLF
        case done
        case failed(HTTPParseError)
    }

    /// Most hex digits in a chunk-size, leading zeros included: more is refused rather than
    /// scanned forever. `Int.max` needs 16.
    package static let maxSizeDigits = 32

    /// Most bytes of trailer section (after the last chunk); more answers 431.
    package let maxTrailerBytes: Int
    /// Most bytes of chunk extensions on one size line; more answers 400.
    package let maxExtensionBytes: Int
    /// Most chunk-data bytes in all; a size that would pass it answers 413 before its data.
    package let maxBodyBytes: Int

    private var state = State.size
    private var digits = 0
    /// The chunk-size being read, then the data bytes still expected.
    private var remaining = 0
    /// Data bytes of the chunks before the current one.
    private var earlierChunks = 0
    private var extensionBytes = 0
    private var trailerBytes = 0

    /// - Parameters:
    ///   - limits: `maxTrailerBytes` (431 beyond it) and `maxChunkExtensionBytes` (400 beyond it).
    ///   - maxBodyBytes: the body limit, checked against each declared size once its digits end,
    ///     so `40000000\r\n` is refused at once rather than after waiting for its bytes.
    package init(limits: HTTPParserLimits = HTTPParserLimits(), maxBodyBytes: Int = .max) {
        maxTrailerBytes = limits.maxTrailerBytes
        maxExtensionBytes = limits.maxChunkExtensionBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// Whether the terminating CRLF has been read.
    package var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes as much of `input` as it can. Returns `.progress` with `consumed == input.count`
    /// until the body ends; `.done` then leaves any bytes after the final CRLF unconsumed; after
    /// `.done` every call returns `.done(consumed: 0, data: [])`. After `.invalid`, every call
    /// returns the same error.
    package mutating func decode(_ input: UnsafeRawBufferPointer) -> Step {
        var data: [Range<Int>] = []
        var i = 0
        let count = input.count
        while i < count {
            switch state {
            case .failed(let error):
                return .invalid(error)
            case .done:
                return .done(consumed: i, data: data)
            case .data:
                let n = min(remaining, count - i)
                data.append(i..<(i + n))
                remaining -= n
                i += n
                if remaining == 0 { state = .dataCR }
                continue
            default:
                break
            }
            let b = input[i]
            i += 1
            if let error = step(b) {
                state = .failed(error)
                return .invalid(error)
            }
            if case .done = state { return .done(consumed: i, data: data) }
        }
        switch state {
        case .failed(let error): return .invalid(error)
        case .done: return .done(consumed: i, data: data)
        default: return .progress(consumed: i, data: data)
        }
    }

    /// Advances the state machine by one framing byte; returns an error to stop.
    private mutating func step(_ b: UInt8) -> HTTPParseError? {
        switch state {
        case .size:
            if let v = HTTPBytes.hexValue(b) {
                digits += 1
                if digits > Self.maxSizeDigits { return .chunkSizeTooManyDigits }
                let (times16, o1) = remaining.multipliedReportingOverflow(by: 16)
                let (sum, o2) = times16.addingReportingOverflow(v)
                if o1 || o2 { return .chunkSizeOverflow }
                remaining = sum
                return nil
            }
            if digits == 0 { return .chunkSizeNotHex }
            // A well-formed size is a promise of bytes: past the limit, refuse it as soon as its
            // digits end, before any data (API.md §10). A malformed one stays a 400.
            if b == HTTPBytes.semicolon || b == HTTPBytes.cr, remaining > maxBodyBytes - earlierChunks {
                return .payloadTooLarge
            }
            switch b {
            case HTTPBytes.semicolon:
                extensionBytes = 0
                state = .sizeExtension
            case HTTPBytes.cr:
                state = .sizeLF
            case HTTPBytes.lf:
                return .bareLFAfterChunkSize
            default:
                return .invalidAfterChunkSize
            }
        case .sizeExtension:
            if b == HTTPBytes.cr {
                state = .sizeLF
            } else if b == HTTPBytes.lf {
                return .bareLFInChunkExtension
            } else if HTTPBytes.isFieldValueByte(b) {
                extensionBytes += 1
                if extensionBytes > maxExtensionBytes { return .chunkExtensionTooLong }
            } else {
                return .controlInChunkExtension
            }
        case .sizeLF:
            guard b == HTTPBytes.lf else { return .bareCRAfterChunkSize }
            earlierChunks += remaining
            if remaining == 0 {
                trailerBytes = 0
                state = .trailerLineStart
            } else {
                state = .data
            }
        case .dataCR:
            guard b == HTTPBytes.cr else { return .missingCRLFAfterChunkData }
            state = .dataLF
        case .dataLF:
            guard b == HTTPBytes.lf else { return .missingCRLFAfterChunkData }
            digits = 0
            remaining = 0
            state = .size
        case .trailerLineStart, .trailerName, .trailerValue, .trailerLF, .finalLF:
            trailerBytes += 1
            if trailerBytes > maxTrailerBytes {
                return .trailerTooLarge(limit: maxTrailerBytes)
            }
            return trailerStep(b)
        case .data, .done, .failed:
            break  // handled by `decode`
        }
        return nil
    }

    /// Trailer field lines have the header grammar (RFC 9112 §7.1.2); they are checked, then dropped.
    private mutating func trailerStep(_ b: UInt8) -> HTTPParseError? {
        switch state {
        case .trailerLineStart:
            if b == HTTPBytes.cr {
                state = .finalLF
            } else if HTTPBytes.isTchar(b) {
                state = .trailerName
            } else if HTTPBytes.isOWS(b) {
                return .obsFoldInTrailer
            } else if b == HTTPBytes.lf {
                return .bareLFInTrailer
            } else {
                return .invalidTrailerName
            }
        case .trailerName:
            if b == HTTPBytes.colon {
                state = .trailerValue
            } else if !HTTPBytes.isTchar(b) {
                return HTTPBytes.isOWS(b) ? .spaceBeforeColonInTrailer : .invalidTrailerName
            }
        case .trailerValue:
            if b == HTTPBytes.cr {
                state = .trailerLF
            } else if !HTTPBytes.isFieldValueByte(b) {
                return b == HTTPBytes.lf ? .bareLFInTrailer : .controlInTrailer
            }
        case .trailerLF:
            guard b == HTTPBytes.lf else { return .bareCRInTrailer }
            state = .trailerLineStart
        case .finalLF:
            guard b == HTTPBytes.lf else { return .bareCRAtEndOfBody }
            state = .done
        default:
            break
        }
        return nil
    }
}
