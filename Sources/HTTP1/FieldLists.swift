import StringBytes

// Comma-separated field values (RFC 9110 §5.6.1) and the semantics built on them: connection
// tokens, `Accept-Encoding` weights, request content codings. Scanned as bytes in place: these
// run for every request, so no substrings, arrays or lowercased copies.

/// `range` of `bytes` without SP and HTAB at either end (OWS, RFC 9110 §5.6.3).
@inline(__always)
func trimmingOWS<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, _ range: Range<Int>) -> Range<Int>
where Bytes.Index == Int {
    var start = range.lowerBound
    var end = range.upperBound
    while start < end, HTTPBytes.isOWS(bytes[start]) { start += 1 }
    while end > start, HTTPBytes.isOWS(bytes[end - 1]) { end -= 1 }
    return start..<end
}

/// The elements of one comma-separated field value, OWS trimmed; empty elements are skipped
/// (RFC 9110 §5.6.1.2).
struct ListElements: IteratorProtocol {
    let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func next() -> Range<Int>? {
        while position <= bytes.count {
            var end = position
            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            let element = trimmingOWS(bytes, position..<end)
            position = end + 1
            if !element.isEmpty { return element }
        }
        return nil
    }
}

/// Whether `bytes` equals the ASCII `word`, ignoring ASCII case.
@inline(__always)
func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
    HTTPHeaders.asciiCaseInsensitiveEqual(
        bytes, UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
}

/// Whether a `Content-Type` value names JSON: `application/json` or any `…+json` type, in any
/// ASCII case (RFC 9110 §8.3.1), parameters after `;` ignored, OWS around the type trimmed.
/// Read as bytes: splitting, trimming and lowercasing it as a `String` (Unicode properties and
/// case mapping) was ~10k instructions of every identify (callgrind).
package func isJSONMediaType(_ value: String) -> Bool {
    withUTF8Bytes(value) { bytes in
        let type = UnsafeBufferPointer(
            rebasing: bytes[trimmingOWS(bytes, 0..<(bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count))])
        let suffix = "+json".utf8.count
        return equalsIgnoringCase(type, "application/json")
            || (type.count >= suffix && equalsIgnoringCase(UnsafeBufferPointer(rebasing: type.suffix(suffix)), "+json"))
    }
}

/// A request body's content coding (RFC 9110 §8.4), as far as the server decodes it.
package enum HTTPContentCoding: Hashable, Sendable {
    case identity, gzip
    /// Anything else, or gzip applied twice: answered 415.
    case unsupported
}

extension HTTPHeaders {
    /// Whether a field `name` lists `token`, ASCII case-insensitively (`Connection: close`,
    /// `Expect: 100-continue`).
    package func containsToken(_ token: StaticString, inField name: StaticString) -> Bool {
        for i in fields.indices where Self.namesEqual(fields[i].name, name) {
            if Self.list(fields[i].value, containsToken: token) { return true }
        }
        return false
    }

    /// Whether the comma-separated `value` has `token` as an element, ASCII case-insensitively.
    package static func list(_ value: String, containsToken token: StaticString) -> Bool {
        return withUTF8Bytes(value) { bytes in
            var elements = ListElements(bytes)
            while let element = elements.next() {
                if equalsIgnoringCase(UnsafeBufferPointer(rebasing: bytes[element]), token) { return true }
            }
            return false
        }
    }

    /// Whether `Accept-Encoding` allows gzip with a non-zero weight (RFC 9110 §12.5.3): the best
    /// `gzip`/`x-gzip` weight if either is listed, else the weight of `*`, else no.
    package var acceptsGzip: Bool {
        var gzip: Bool?
        var star: Bool?
        for i in fields.indices where Self.namesEqual(fields[i].name, "Accept-Encoding" as StaticString) {
            withUTF8Bytes(fields[i].value) { bytes in
                var elements = ListElements(bytes)
                while let element = elements.next() {
                    let item = UnsafeBufferPointer(rebasing: bytes[element])
                    var nameEnd = 0
                    while nameEnd < item.count, item[nameEnd] != HTTPBytes.semicolon { nameEnd += 1 }
                    let name = UnsafeBufferPointer(rebasing: item[trimmingOWS(item, 0..<nameEnd)])
                    let allowed = hasNonZeroWeight(UnsafeBufferPointer(rebasing: item[nameEnd...]))
                    if equalsIgnoringCase(name, "gzip") || equalsIgnoringCase(name, "x-gzip") {
                        gzip = (gzip ?? false) || allowed
                    } else if equalsIgnoringCase(name, "*") {
                        star = allowed
                    }
                }
            }
        }
        return gzip ?? star ?? false
    }

    /// The request body's content coding: `identity` elements are no coding; one gzip is gzip.
    package var contentCoding: HTTPContentCoding {
        var coding = HTTPContentCoding.identity
        for i in fields.indices where Self.namesEqual(fields[i].name, "Content-Encoding" as StaticString) {
            withUTF8Bytes(fields[i].value) { bytes in
                var elements = ListElements(bytes)
                while let element = elements.next() {
                    let name = UnsafeBufferPointer(rebasing: bytes[element])
                    if equalsIgnoringCase(name, "identity") { continue }
                    let isGzip = equalsIgnoringCase(name, "gzip") || equalsIgnoringCase(name, "x-gzip")
                    coding = coding == .identity && isGzip ? .gzip : .unsupported
                }
            }
        }
        return coding
    }
}

/// The parameters after a coding (`;q=0.5`): false when a `q` weight is zero or malformed
/// (RFC 9110 §12.4.2: `0[.000]` or `1[.000]`, up to three decimals), true otherwise.
private func hasNonZeroWeight(_ parameters: UnsafeBufferPointer<UInt8>) -> Bool {
    var start = 0
    while start < parameters.count {
        start += 1  // the ';'
        var end = start
        while end < parameters.count, parameters[end] != HTTPBytes.semicolon { end += 1 }
        let parameter = UnsafeBufferPointer(rebasing: parameters[trimmingOWS(parameters, start..<end)])
        if parameter.count >= 2, parameter[0] | 0x20 == UInt8(ascii: "q"), parameter[1] == UInt8(ascii: "=") {
            return isNonZeroQValue(UnsafeBufferPointer(rebasing: parameter[2...]))
        }
        start = end
    }
    return true
}

private func isNonZeroQValue(_ q: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let first = q.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return false }
    if q.count == 1 { return first == UInt8(ascii: "1") }
    guard q[1] == UInt8(ascii: "."), q.count <= 5 else { return false }
    var nonZero = first == UInt8(ascii: "1")
    for digit in q[2...] {
        guard digit >= 0x30, digit <= 0x39 else { return false }
        if digit != 0x30 {
            if first == UInt8(ascii: "1") { return false }  // above 1
            nonZero = true
        }
    }
    return nonZero
}

extension HTTPRequestHead {
    /// Whether the connection persists after this request (RFC 9112 §9.3): 1.1 unless
    /// `Connection: close`; 1.0 only with `Connection: keep-alive`.
    package var keepAlive: Bool {
        if headers.containsToken("close", inField: "Connection") { return false }
        if version == .http1_1 { return true }
        return headers.containsToken("keep-alive", inField: "Connection")
    }
}
