// Body framing of a request (RFC 9112 §6): refuse every head whose body could be read two ways.

func bodyFramingImpl(of head: HTTPRequestHead) -> Result<HTTPBodyFraming, HTTPParseError> {
    var hostCount = 0
    var transferEncodings: [String] = []
    var contentLengths: [String] = []
    for field in head.headers {
        if HTTPHeaders.namesEqual(field.name, "host") {
            hostCount += 1
        } else if HTTPHeaders.namesEqual(field.name, "transfer-encoding") {
            transferEncodings.append(field.value)
        } else if HTTPHeaders.namesEqual(field.name, "content-length") {
            contentLengths.append(field.value)
        }
    }

    // RFC 9112 §3.2: 400 for a 1.1 request without Host, and for any request with several.
    if hostCount > 1 { return .failure(.badRequest("more than one Host field")) }
    if hostCount == 0 && head.version != .http1_0 {
        return .failure(.badRequest("HTTP/1.1 request without a Host field"))
    }

    if !transferEncodings.isEmpty {
        // RFC 9112 §6.3 item 3: both fields is a smuggling attempt; refuse rather than guess.
        if !contentLengths.isEmpty {
            return .failure(.badRequest("both Transfer-Encoding and Content-Length"))
        }
        // RFC 9112 §6.1: a 1.0 recipient cannot have meant chunked; its framing is faulty.
        if head.version == .http1_0 {
            return .failure(.badRequest("Transfer-Encoding in an HTTP/1.0 request"))
        }
        var codings: [Substring] = []
        for value in transferEncodings {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let coding = trimOWS(element)
                // RFC 9110 §5.6.1.2: empty list elements are ignored.
                if !coding.isEmpty { codings.append(coding) }
            }
        }
        guard let last = codings.last else {
            return .failure(.badRequest("empty Transfer-Encoding"))
        }
        // RFC 9112 §6.3 item 4: in a request, chunked must be the final coding, else 400.
        guard isChunked(last) else {
            return .failure(.badRequest("chunked is not the final transfer coding"))
        }
        for coding in codings.dropLast() {
            // RFC 9112 §7: chunked is never applied twice.
            if isChunked(coding) {
                return .failure(.badRequest("chunked applied more than once"))
            }
            return .failure(.notImplemented("transfer coding '\(coding)' is not supported"))
        }
        return .success(.chunked)
    }

    var length: Int?
    for value in contentLengths {
        for element in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard let n = parseDecimal(trimOWS(element)) else {
                return .failure(.badRequest("Content-Length is not a non-negative decimal integer"))
            }
            if let length, length != n {
                return .failure(.badRequest("differing Content-Length values"))
            }
            length = n
        }
    }
    return .success(length.map { .contentLength($0) } ?? .none)
}

/// Strips SP and HTAB from both ends.
private func trimOWS(_ s: Substring) -> Substring {
    let utf8 = s.utf8
    var start = utf8.startIndex
    var end = utf8.endIndex
    while start < end, HTTPBytes.isOWS(utf8[start]) { start = utf8.index(after: start) }
    while end > start, HTTPBytes.isOWS(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
    return Substring(utf8[start..<end])
}

/// `chunked`, ASCII case-insensitively (RFC 9112 §7: coding names are case-insensitive).
private func isChunked(_ s: Substring) -> Bool {
    let expected: [UInt8] = Array("chunked".utf8)
    let utf8 = s.utf8
    guard utf8.count == expected.count else { return false }
    for (b, e) in zip(utf8, expected) where (b >= 0x41 && b <= 0x5A ? b | 0x20 : b) != e {
        return false
    }
    return true
}

/// 1*DIGIT (RFC 9110 §8.6) without overflow; nil for anything else, empty included.
private func parseDecimal(_ s: Substring) -> Int? {
    guard !s.utf8.isEmpty else { return nil }
    var n = 0
    for b in s.utf8 {
        guard b >= 0x30, b <= 0x39 else { return nil }
        let (times10, o1) = n.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(Int(b &- 0x30))
        if o1 || o2 { return nil }
        n = sum
    }
    return n
}
