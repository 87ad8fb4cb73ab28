import StringBytes

// Body framing of a request (RFC 9112 §6): refuse every head whose body could be read two ways.
// Also the Host check (RFC 9112 §3.2), which needs the same one pass over the fields.

func bodyFramingImpl(of head: HTTPRequestHead, validHost: inout String?) -> Result<HTTPBodyFraming, HTTPParseError> {
    var hostCount = 0
    var hostIsValid = true
    var hasTransferEncoding = false
    var hasContentLength = false
    // By index: binding each field would retain and release its strings (every request).
    let fields = head.headers.fields
    for i in fields.indices {
        let name = fields[i].name
        if HTTPHeaders.namesEqual(name, "host" as StaticString) {
            hostCount += 1
            // A keep-alive client sends the same value every time: checked once, compared after.
            let value = fields[i].value
            if value != validHost {
                if isValidHost(value) { validHost = value } else { hostIsValid = false }
            }
        } else if HTTPHeaders.namesEqual(name, "transfer-encoding" as StaticString) {
            hasTransferEncoding = true
        } else if HTTPHeaders.namesEqual(name, "content-length" as StaticString) {
            hasContentLength = true
        }
    }

    // RFC 9112 §3.2: 400 for a 1.1 request without Host, for any request with several, and
    // for a value that is not `host [":" port]`.
    if hostCount > 1 { return .failure(.repeatedHost) }
    if hostCount == 0 && head.version != .http1_0 { return .failure(.missingHost) }
    if !hostIsValid { return .failure(.invalidHost) }

    if hasTransferEncoding {
        // RFC 9112 §6.3 item 3: both fields is a smuggling attempt; refuse rather than guess.
        if hasContentLength { return .failure(.lengthAndChunked) }
        // RFC 9112 §6.1: a 1.0 recipient cannot have meant chunked; its framing is faulty.
        if head.version == .http1_0 { return .failure(.transferEncodingInHTTP10) }
        return transferCodingFraming(head.headers)
    }
    guard hasContentLength else { return .success(.none) }
    return contentLengthFraming(head.headers)
}

/// The codings of every `Transfer-Encoding` field, in order: `chunked` must be last and only
/// last (RFC 9112 §6.3 item 4, §7); any other coding is not implemented (501).
private func transferCodingFraming(_ headers: HTTPHeaders) -> Result<HTTPBodyFraming, HTTPParseError> {
    var count = 0
    var firstIsChunked = false
    var lastIsChunked = false
    /// The first coding when it is not `chunked`: the request is refused then, so only a
    /// refused request pays for this string.
    var firstUnknown: String?
    for field in headers where HTTPHeaders.namesEqual(field.name, "transfer-encoding") {
        withUTF8Bytes(field.value) { bytes in
            var elements = ListElements(bytes)
            while let element = elements.next() {
                let coding = UnsafeBufferPointer(rebasing: bytes[element])
                lastIsChunked = equalsIgnoringCase(coding, "chunked")
                if count == 0 {
                    firstIsChunked = lastIsChunked
                    if !firstIsChunked { firstUnknown = String(decoding: coding, as: UTF8.self) }
                }
                count += 1
            }
        }
    }
    if count == 0 { return .failure(.emptyTransferEncoding) }
    if !lastIsChunked { return .failure(.chunkedNotFinal) }
    if count == 1 { return .success(.chunked) }
    // The first of the codings before the final chunked decides the answer.
    if firstIsChunked { return .failure(.chunkedTwice) }
    return .failure(.unsupportedTransferCoding(firstUnknown ?? ""))
}

/// Every `Content-Length` value and list element must be the same decimal (RFC 9112 §6.3 item 5:
/// `5, 5` counts as one); anything else is 400.
private func contentLengthFraming(_ headers: HTTPHeaders) -> Result<HTTPBodyFraming, HTTPParseError> {
    var length: Int?
    for field in headers where HTTPHeaders.namesEqual(field.name, "content-length") {
        let error = withUTF8Bytes(field.value) { bytes -> HTTPParseError? in
            // Not `ListElements`: an empty element (`5,`) is an error here, not skipped.
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                guard let n = parseDecimal(UnsafeBufferPointer(rebasing: bytes[trimmingOWS(bytes, start..<end)]))
                else { return .invalidContentLength }
                if let length, length != n { return .differingContentLengths }
                length = n
                start = end + 1
            }
            return nil
        }
        if let error { return .failure(error) }
    }
    return .success(length.map { .contentLength($0) } ?? .none)
}

/// 1*DIGIT (RFC 9110 §8.6) without overflow; nil for anything else, empty included.
private func parseDecimal(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
    guard !digits.isEmpty else { return nil }
    var n = 0
    for b in digits {
        guard b >= 0x30, b <= 0x39 else { return nil }
        let (times10, o1) = n.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(Int(b &- 0x30))
        if o1 || o2 { return nil }
        n = sum
    }
    return n
}
