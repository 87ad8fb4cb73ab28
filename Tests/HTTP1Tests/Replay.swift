// Replays every table case whole, byte by byte and split at random points (STYLE.md example 9;
// model: swift-nio's ByteToMessageDecoderVerifier). All three must reach the same outcome.

import HTTP1
import TestSupport

// MARK: - Request head

/// A comparable summary of one `parseRequestHead` outcome.
enum HeadOutcome: Equatable, CustomStringConvertible {
    case complete(consumed: Int, head: String)
    case needMore
    case invalid(HTTPParseError)

    var description: String {
        switch self {
        case .complete(let consumed, let head): "complete(\(consumed)) \(head)"
        case .needMore: "needMore"
        case .invalid(let error): "invalid(\(error))"
        }
    }
}

func summary(_ head: HTTPRequestHead) -> String {
    var s = "\(head.method) \(head.target) \(head.version)"
    for field in head.headers { s += " [\(field.name)=\(field.value)]" }
    return s
}

/// Parses `bytes` once; returns the outcome, the head, and the resume point to pass next.
func parseOnce(_ bytes: [UInt8], limits: HTTPParserLimits, resumingFrom point: HTTPHeadResumePoint = .start)
    -> (HeadOutcome, HTTPRequestHead?, HTTPHeadResumePoint)
{
    bytes.withUnsafeBytes { buffer in
        switch parseRequestHead(buffer, limits: limits, resumingFrom: point) {
        case .complete(let head, let consumed):
            return (.complete(consumed: consumed, head: summary(head)), head, point)
        case .needMore(let next):
            return (.needMore, nil, next)
        case .invalid(let error):
            return (.invalid(error), nil, point)
        }
    }
}

/// Feeds `bytes` in the given pieces, growing the buffer and passing the resume point back, as a
/// server does. Returns the first non-needMore outcome, or needMore; records every broken invariant.
func parseInPieces(_ bytes: [UInt8], cuts: [Int], limits: HTTPParserLimits) -> (HeadOutcome, [String]) {
    var problems: [String] = []
    var point = HTTPHeadResumePoint.start
    for end in cuts + [bytes.count] where end <= bytes.count {
        let prefix = Array(bytes[..<end])
        let (outcome, _, next) = parseOnce(prefix, limits: limits, resumingFrom: point)
        // A resumed parse must agree with a fresh one over the same prefix.
        let (fresh, _, _) = parseOnce(prefix, limits: limits)
        if fresh != outcome {
            problems.append("prefix \(end): resumed \(outcome) but fresh \(fresh)")
        }
        switch outcome {
        case .needMore:
            // Validated bytes never exceed the prefix and never go back.
            if next.validatedByteCount > end {
                problems.append("prefix \(end): validated \(next.validatedByteCount) out of range")
            }
            if next.validatedByteCount < point.validatedByteCount {
                problems.append("prefix \(end): validated went back from \(point) to \(next)")
            }
            point = next
        case .complete(let consumed, _):
            if consumed != end && cuts.count == bytes.count {
                // Byte by byte, the head completes exactly when its last byte arrives.
                problems.append("byte by byte: complete at \(end) but consumed \(consumed)")
            }
            if consumed > end { problems.append("consumed \(consumed) > \(end)") }
            return (outcome, problems)
        case .invalid:
            return (outcome, problems)
        }
    }
    return (.needMore, problems)
}

// MARK: - Chunked body

enum ChunkedOutcome: Equatable, CustomStringConvertible {
    case done(body: [UInt8], consumed: Int)
    case progress(body: [UInt8])
    case invalid(HTTPParseError)

    var description: String {
        switch self {
        case .done(let body, let consumed):
            "done(\(String(decoding: body, as: UTF8.self)), consumed: \(consumed))"
        case .progress(let body): "progress(\(String(decoding: body, as: UTF8.self)))"
        case .invalid(let error): "invalid(\(error))"
        }
    }
}

/// Feeds `bytes` to a fresh decoder in the given pieces (each piece is the bytes not yet
/// consumed), collecting the body. Records every broken invariant.
func decodeInPieces(_ bytes: [UInt8], cuts: [Int], make: () -> ChunkedBodyDecoder)
    -> (ChunkedOutcome, [String])
{
    var decoder = make()
    var problems: [String] = []
    var body: [UInt8] = []
    var offset = 0
    for end in cuts + [bytes.count] where end <= bytes.count && end >= offset {
        let piece = Array(bytes[offset..<end])
        let step = piece.withUnsafeBytes { decoder.decode($0) }
        func collect(_ ranges: [Range<Int>], consumed: Int) {
            var last = 0
            for r in ranges {
                if r.lowerBound < last || r.upperBound > consumed {
                    problems.append("range \(r) out of order or past consumed \(consumed)")
                    continue
                }
                last = r.upperBound
                body += piece[r]
            }
        }
        switch step {
        case .progress(let consumed, let ranges):
            if consumed != piece.count { problems.append("progress consumed \(consumed) of \(piece.count)") }
            collect(ranges, consumed: consumed)
            offset += consumed
        case .done(let consumed, let ranges):
            if consumed > piece.count { problems.append("done consumed \(consumed) of \(piece.count)") }
            collect(ranges, consumed: consumed)
            // Once done, the decoder takes nothing more.
            let again = piece.withUnsafeBytes { decoder.decode($0) }
            if case .done(0, let more) = again, more.isEmpty {
            } else {
                problems.append("decode after done returned \(again)")
            }
            return (.done(body: body, consumed: offset + consumed), problems)
        case .invalid(let error):
            return (.invalid(error), problems)
        }
    }
    return (.progress(body: body), problems)
}

/// The three replays of STYLE.md example 9: whole, byte by byte, and random splits.
func replayCuts(count: Int, seeds: ClosedRange<UInt64> = 1...8) -> [(String, [Int])] {
    var plans: [(String, [Int])] = [("whole", []), ("byte by byte", Array(0..<count))]
    for seed in seeds {
        var rng = SplitMix64(state: seed)
        var cuts: [Int] = []
        var at = 0
        while at < count {
            at += Int.random(in: 1...max(1, count / 3 + 1), using: &rng)
            if at < count { cuts.append(at) }
        }
        plans.append(("random split seed \(seed)", cuts))
    }
    return plans
}
