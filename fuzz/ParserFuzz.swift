// libFuzzer entry for the HTTP1 wire format. Built with Sources/HTTP1/*.swift as one module by
// scripts/fuzz-parser.sh. Any trap (a broken invariant below, an overflow, an out-of-bounds
// access caught by ASan or a debug precondition) is a finding.
//
// Invariants:
// - parseRequestHead: consumed in 1...count; needMore's validated bytes in 0...count; the same
//   outcome whole, resumed after a split (the resume point passed back) and grown byte by byte; a prefix that is
//   already complete or invalid stays so with more bytes; a complete head re-serialised in
//   canonical form parses back to the same head.
// - bodyFraming never traps.
// - ChunkedBodyDecoder: progress consumes everything; ranges are ordered and within consumed;
//   the same body and outcome whole and split in two.

// MARK: - Request head

private struct Outcome: Equatable {
    var kind: Int  // 0 complete, 1 needMore, 2 invalid
    var consumed = 0
    var head = ""
    var error: HTTPParseError?
}

private func summary(_ head: HTTPRequestHead) -> String {
    var s = "\(head.method.rawValue) \(head.target) \(head.version)"
    for field in head.headers { s += "\n\(field.name): \(field.value)" }
    return s
}

private func parse(
    _ bytes: UnsafeRawBufferPointer, _ limits: HTTPParserLimits, resumingFrom point: HTTPHeadResumePoint = .start
) -> (Outcome, HTTPRequestHead?, HTTPHeadResumePoint) {
    switch parseRequestHead(bytes, limits: limits, resumingFrom: point) {
    case .complete(let head, let consumed):
        precondition(consumed >= 1 && consumed <= bytes.count, "consumed \(consumed) of \(bytes.count)")
        return (Outcome(kind: 0, consumed: consumed, head: summary(head)), head, point)
    case .needMore(let next):
        precondition(next.validatedByteCount <= bytes.count, "validated \(next) of \(bytes.count)")
        return (Outcome(kind: 1), nil, next)
    case .invalid(let error):
        precondition([400, 414, 431, 501, 505].contains(error.status.code), "status \(error.status.code)")
        return (Outcome(kind: 2, error: error), nil, point)
    }
}

/// Copies a prefix into its own allocation so ASan sees any read past its end.
private func withPrefix<R>(_ bytes: UnsafeRawBufferPointer, _ n: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: n, alignment: 1)
    defer { copy.deallocate() }
    if n > 0 { copy.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<n])) }
    return body(UnsafeRawBufferPointer(copy))
}

private func checkHead(_ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits, split: Int) {
    let (whole, head, _) = parse(bytes, limits)

    // Split once, passing the resume point back.
    let cut = bytes.count == 0 ? 0 : split % (bytes.count + 1)
    let (first, _, point) = withPrefix(bytes, cut) { parse($0, limits) }
    if first.kind == 1 {
        let (resumed, _, _) = parse(bytes, limits, resumingFrom: point)
        precondition(resumed == whole, "split at \(cut): \(resumed) vs \(whole)")
    } else {
        // Complete or invalid on a prefix: more bytes must not change the answer.
        precondition(first == whole, "prefix \(cut) decided \(first) but whole \(whole)")
    }

    // Grow byte by byte (short inputs only, to keep executions fast).
    if bytes.count <= 300 {
        var s = HTTPHeadResumePoint.start
        var decided: Outcome?
        for n in 0...bytes.count {
            let (o, _, next) = withPrefix(bytes, n) { parse($0, limits, resumingFrom: s) }
            if o.kind == 1 {
                precondition(next.validatedByteCount >= s.validatedByteCount, "validated bytes went back")
                s = next
                continue
            }
            if o.kind == 0 { precondition(o.consumed == n, "completed at \(n) with consumed \(o.consumed)") }
            decided = o
            break
        }
        precondition((decided ?? Outcome(kind: 1)) == whole, "byte by byte \(String(describing: decided)) vs \(whole)")
    }

    guard let head else { return }
    _ = bodyFraming(of: head)

    // Round trip: a canonical serialisation of the head parses back to the same head.
    var canonical = Array("\(head.method.rawValue) \(head.target) \(head.version)\r\n".utf8)
    for field in head.headers { canonical += Array("\(field.name): \(field.value)\r\n".utf8) }
    canonical += [13, 10]
    var roomy = limits
    roomy.maxHeaderSectionBytes = Int.max / 2
    roomy.maxTargetLength = Int.max / 2
    let (again, _, _) = canonical.withUnsafeBytes { parse($0, roomy) }
    precondition(again.kind == 0 && again.head == whole.head, "round trip: \(again) vs \(whole)")

    var response: [UInt8] = []
    let framing = HTTPResponseFraming(
        requestVersion: head.version, isHead: head.method == .HEAD, closing: !head.keepAlive,
        gzip: head.headers.acceptsGzip)
    serializeResponse(status: .ok, headers: head.headers, body: [], framing: framing, date: "d", into: &response)
    _ = head.headers.contentCoding
}

// MARK: - Chunked body

private struct Decoded: Equatable {
    var body: [UInt8] = []
    var consumed = 0
    var done = false
    var error: HTTPParseError?
}

private func decode(_ bytes: UnsafeRawBufferPointer, cuts: [Int]) -> Decoded {
    var limits = HTTPParserLimits()
    limits.maxTrailerBytes = 64
    limits.maxChunkExtensionBytes = 32
    var decoder = ChunkedBodyDecoder(limits: limits, maxBodyBytes: 4096)
    var result = Decoded()
    var offset = 0
    for end in cuts + [bytes.count] where end >= offset && end <= bytes.count {
        let step = withPrefix(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), end - offset) {
            piece -> (ChunkedBodyDecoder.Step, [UInt8]) in
            let step = decoder.decode(piece)
            var body: [UInt8] = []
            var consumed = 0
            var ranges: [Range<Int>] = []
            switch step {
            case .progress(let c, let r):
                precondition(c == piece.count, "progress consumed \(c) of \(piece.count)")
                consumed = c
                ranges = r
            case .done(let c, let r):
                precondition(c <= piece.count, "done consumed \(c) of \(piece.count)")
                consumed = c
                ranges = r
            case .invalid(let error):
                precondition([400, 413, 431].contains(error.status.code), "status \(error.status.code)")
            }
            var last = 0
            for r in ranges {
                precondition(r.lowerBound >= last && r.upperBound <= consumed, "range \(r) consumed \(consumed)")
                last = r.upperBound
                body += UnsafeRawBufferPointer(rebasing: piece[r])
            }
            return (step, body)
        }
        result.body += step.1
        switch step.0 {
        case .progress(let c, _):
            offset += c
        case .done(let c, _):
            result.consumed = offset + c
            result.done = true
            return result
        case .invalid(let error):
            // Data delivered before the error depends on how the input was split; only the
            // error itself must agree.
            return Decoded(error: error)
        }
    }
    result.consumed = offset
    return result
}

private func checkChunked(_ bytes: UnsafeRawBufferPointer, split: Int) {
    let whole = decode(bytes, cuts: [])
    let cut = bytes.count == 0 ? 0 : split % (bytes.count + 1)
    let halves = decode(bytes, cuts: [cut])
    precondition(whole == halves, "chunked split at \(cut): \(halves) vs \(whole)")
    if bytes.count <= 200 {
        let single = decode(bytes, cuts: Array(0..<bytes.count))
        precondition(whole == single, "chunked byte by byte: \(single) vs \(whole)")
    }
}

// MARK: - Entry

private let smallLimits: HTTPParserLimits = {
    var l = HTTPParserLimits()
    l.maxTargetLength = 24
    l.maxHeaderSectionBytes = 200
    l.maxHeaderCount = 4
    l.maxLeadingEmptyLines = 2
    return l
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func parserFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // A split point derived from the input, so the fuzzer can steer it.
    var split = size / 2
    for b in bytes.prefix(8) { split = split &* 31 &+ Int(b) }
    split = split & Int.max

    checkHead(bytes, limits: HTTPParserLimits(), split: split)
    checkHead(bytes, limits: smallLimits, split: split &+ 1)
    checkChunked(bytes, split: split)

    // A chunked body behind a parsed head, as the server would see it.
    if case .complete(let head, let consumed) = parseRequestHead(bytes, limits: HTTPParserLimits()),
        case .success(.chunked) = bodyFraming(of: head)
    {
        checkChunked(UnsafeRawBufferPointer(rebasing: bytes[consumed...]), split: split)
    }
    return 0
}
