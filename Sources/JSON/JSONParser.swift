/// Why a document was refused, and where.
package struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset of the offending input (0-based).
    package let offset: Int
    /// A sentence for people, ending with the offset, e.g. "unexpected character 'x' at byte 12".
    package let message: String

    /// An error at `offset`; `reason` is completed with the position.
    package init(offset: Int, reason: String) {
        self.offset = offset
        self.message = "\(reason) at byte \(offset)"
    }

    /// The message.
    package var description: String { message }
}

/// A strict RFC 8259 parser over bytes.
///
/// Exactly one value with optional whitespace around it; no comments, trailing commas, BOM,
/// `NaN`, leading zeros, lone surrogates, raw control characters or invalid UTF-8, and no object
/// that names a member twice (RFC 8259 §4 leaves those to each reader: one body, one reading,
/// API.md §2). Nesting is
/// bounded by `maxDepth` and walked with an explicit stack, so `[[[[…` cannot exhaust the
/// thread's stack whatever the limit.
///
/// ```swift
/// let value = try JSONParser.parse(Array(body), maxDepth: 32)
/// ```
package struct JSONParser {
    /// Default nesting limit: arrays and objects inside one another.
    package static let defaultMaxDepth = 32
    /// Hard ceiling on `maxDepth`: parsing is iterative, but destroying, comparing and
    /// serializing a `JSONValue` recurse, so a 100 000-deep value would still blow the stack.
    package static let maximumDepth = 1024

    /// Parses one JSON document from `bytes`.
    /// - Parameters:
    ///   - bytes: UTF-8 JSON text.
    ///   - maxDepth: most arrays/objects open at once; `[]` has depth 1, a bare scalar 0.
    ///     Values above ``maximumDepth`` are lowered to it.
    package static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        // withUnsafeBufferPointer cannot forward a typed throw, so carry the result out.
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(input: buffer, maxDepth: maxDepth)
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        return try result.get()
    }

    /// Parses one JSON document from raw memory (e.g. a slice of a request buffer).
    package static func parse(_ buffer: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONParseError)
        -> JSONValue
    {
        var parser = Parser(input: buffer.bindMemory(to: UInt8.self), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses one JSON document from the UTF-8 of `string`.
    package static func parse(_ string: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(Array(string.utf8), maxDepth: maxDepth)
    }
}

// MARK: - The parser proper

enum ASCII {
    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), slash = UInt8(ascii: "/")
    static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    static let minus = UInt8(ascii: "-"), plus = UInt8(ascii: "+"), dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
    static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), newline = UInt8(ascii: "\n"),
        carriageReturn = UInt8(ascii: "\r")
}

/// One open container: its members so far and, for objects, the key awaiting its value.
private struct Frame {
    var isObject: Bool
    var array: [JSONValue] = []
    var object = JSONObject()
    var key = ""
    /// Where `key`'s opening quote is, for the error when it repeats an earlier member.
    var keyOffset = 0
}

struct Parser {
    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0
    /// Bytes of the string being decoded, reused across strings that contain escapes.
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = min(max(0, maxDepth), JSONParser.maximumDepth)
    }

    // MARK: Errors

    func error(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? position, reason: reason)
    }

    /// "unexpected character 'x'" or "unexpected end of input", for the current byte.
    func unexpected(expecting: String? = nil) -> JSONParseError {
        let suffix = expecting.map { ", expected \($0)" } ?? ""
        guard position < input.count else {
            return error("unexpected end of input" + suffix)
        }
        let byte = input[position]
        let shown =
            (0x21...0x7E).contains(byte)
            ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
        return error("unexpected character \(shown)" + suffix)
    }

    // MARK: Structure

    @inline(__always)
    mutating func skipWhitespace() {
        while position < input.count {
            let byte = input[position]
            guard byte == ASCII.space || byte == ASCII.newline || byte == ASCII.carriageReturn || byte == ASCII.tab
            else { return }
            position += 1
        }
    }

    @inline(__always)
    func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // RFC 8259 §8.1: implementations MUST NOT add a BOM, and we choose not to accept one.
        if input.count >= 3, input[0] == 0xEF, input[1] == 0xBB, input[2] == 0xBF {
            throw error("byte order mark is not allowed", at: 0)
        }
        let value = try parseValue()
        skipWhitespace()
        guard position == input.count else {
            throw unexpected(expecting: "end of input after the top-level value")
        }
        return value
    }

    /// Parses a value, walking nested containers with an explicit stack of frames.
    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        var stack: [Frame] = []
        var value: JSONValue

        expectingValue: while true {
            skipWhitespace()
            guard let byte = peek() else { throw unexpected(expecting: "a value") }
            switch byte {
            case ASCII.openBracket, ASCII.openBrace:
                guard stack.count < maxDepth else {
                    throw error("nesting deeper than \(maxDepth) levels")
                }
                let isObject = byte == ASCII.openBrace
                position += 1
                skipWhitespace()
                if peek() == (isObject ? ASCII.closeBrace : ASCII.closeBracket) {
                    position += 1
                    value = isObject ? .object(JSONObject()) : .array([])
                    break
                }
                var frame = Frame(isObject: isObject)
                // Most objects and arrays are small: room for a few members at once instead of
                // growing the storage at one, two and four (an allocation and a copy each).
                if isObject {
                    frame.object.reserveCapacity(4)
                    (frame.key, frame.keyOffset) = try parseKey()
                } else {
                    frame.array.reserveCapacity(4)
                }
                stack.append(frame)
                continue expectingValue
            case ASCII.quote:
                value = .string(try parseString())
            case ASCII.minus, ASCII.zero...ASCII.nine:
                value = .number(try parseNumber())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            default:
                throw unexpected(expecting: "a value")
            }

            // A value is complete: hand it to the enclosing containers, closing as many as end here.
            // The open container is changed where it lies in `stack` and leaves it only when it
            // closes: popping and pushing it back per member copied the frame each time (~3k
            // instructions per event of a `POST /v1/events` batch, callgrind).
            while let top = stack.indices.last {
                skipWhitespace()
                if stack[top].isObject {
                    let key = stack[top].key
                    // The same one lookup a plain assignment makes; a repeat is refused, not overwritten.
                    guard stack[top].object.insertNew(key, value) else {
                        throw error("duplicate member name \"\(key)\"", at: stack[top].keyOffset)
                    }
                    switch peek() {
                    case ASCII.comma:
                        position += 1
                        skipWhitespace()
                        (stack[top].key, stack[top].keyOffset) = try parseKey()
                        continue expectingValue
                    case ASCII.closeBrace:
                        position += 1
                        value = .object(stack.removeLast().object)
                    default:
                        throw unexpected(expecting: "',' or '}'")
                    }
                } else {
                    stack[top].array.append(value)
                    switch peek() {
                    case ASCII.comma:
                        position += 1
                        continue expectingValue
                    case ASCII.closeBracket:
                        position += 1
                        value = .array(stack.removeLast().array)
                    default:
                        throw unexpected(expecting: "',' or ']'")
                    }
                }
            }
            return value
        }
    }

    /// `"key"` then `:`; leaves the position before the value. Returns the key and its offset.
    mutating func parseKey() throws(JSONParseError) -> (String, Int) {
        skipWhitespace()
        guard peek() == ASCII.quote else { throw unexpected(expecting: "a string key") }
        let offset = position
        let key = try parseString()
        skipWhitespace()
        guard peek() == ASCII.colon else { throw unexpected(expecting: "':'") }
        position += 1
        return (key, offset)
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = position
        let count = literal.utf8CodeUnitCount
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count {
            guard start + offset < input.count, input[start + offset] == text[offset] else {
                position = start + offset
                throw unexpected(expecting: "'\(literal)'")
            }
        }
        position += count
    }

    // MARK: Numbers

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; returns the text.
    mutating func parseNumber() throws(JSONParseError) -> String {
        let start = position
        if input[position] == ASCII.minus { position += 1 }
        guard let first = peek(), (ASCII.zero...ASCII.nine).contains(first) else {
            throw unexpected(expecting: "a digit")
        }
        position += 1
        if first == ASCII.zero {
            if let next = peek(), (ASCII.zero...ASCII.nine).contains(next) {
                throw error("leading zeros are not allowed in numbers")
            }
        } else {
            skipDigits()
        }
        if peek() == ASCII.dot {
            position += 1
            guard let digit = peek(), (ASCII.zero...ASCII.nine).contains(digit) else {
                throw unexpected(expecting: "a digit after '.'")
            }
            skipDigits()
        }
        if let e = peek(), e | 0x20 == UInt8(ascii: "e") {
            position += 1
            if let sign = peek(), sign == ASCII.plus || sign == ASCII.minus { position += 1 }
            guard let digit = peek(), (ASCII.zero...ASCII.nine).contains(digit) else {
                throw unexpected(expecting: "a digit in the exponent")
            }
            skipDigits()
        }
        return String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
    }

    @inline(__always)
    mutating func skipDigits() {
        while position < input.count, (ASCII.zero...ASCII.nine).contains(input[position]) { position += 1 }
    }

    // MARK: Strings

    /// A string starting at the opening quote. Unescaped runs are validated as UTF-8 and
    /// copied in one go; only strings with escapes go through `scratch`.
    mutating func parseString() throws(JSONParseError) -> String {
        let run = try scanString()
        guard let run else { return String(decoding: scratch, as: UTF8.self) }
        return String(decoding: UnsafeBufferPointer(rebasing: input[run]), as: UTF8.self)
    }

    /// Validates the string starting at the opening quote and moves past it. Returns where its
    /// text lies in the input when it has no escapes; otherwise nil, with the decoded text in
    /// `scratch`.
    mutating func scanString() throws(JSONParseError) -> Range<Int>? {
        position += 1  // opening quote
        var runStart = position
        var escaped = false
        scratch.removeAll(keepingCapacity: true)

        while position < input.count {
            let byte = input[position]
            if byte == ASCII.quote {
                let run = runStart..<position
                position += 1
                guard escaped else { return run }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[run]))
                return nil
            } else if byte == ASCII.backslash {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
                escaped = true
                try parseEscape()
                runStart = position
            } else if byte < 0x20 {
                throw error(
                    "control character 0x\(String(byte, radix: 16, uppercase: true)) must be escaped in a string")
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error("unterminated string")
    }

    /// Validates one multi-byte UTF-8 sequence (Unicode Table 3-7: no overlongs, no surrogates, ≤ U+10FFFF).
    @inline(__always)
    mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = input[position]
        let length: Int
        var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: throw error("invalid UTF-8")
        }
        guard position + length <= input.count else { throw error("invalid UTF-8") }
        let second = input[position + 1]
        guard second >= lower, second <= upper else { throw error("invalid UTF-8") }
        for offset in 2..<max(2, length) where input[position + offset] & 0xC0 != 0x80 {
            throw error("invalid UTF-8")
        }
        position += length
    }

    /// One escape starting at the backslash; appends its UTF-8 to `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        let start = position
        position += 1
        guard let kind = peek() else { throw error("unterminated string") }
        position += 1
        switch kind {
        case ASCII.quote, ASCII.backslash, ASCII.slash: scratch.append(kind)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try parseHex4())
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low surrogate (RFC 8259 §7).
                guard position + 1 < input.count, input[position] == ASCII.backslash,
                    input[position + 1] == UInt8(ascii: "u")
                else { throw error("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true))", at: start) }
                position += 2
                let low = UInt32(try parseHex4())
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true))", at: start)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true))", at: start)
            }
            appendUTF8(scalar)
        default:
            position = start
            throw error("invalid escape")
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = peek() else { throw unexpected(expecting: "a hex digit in \\u escape") }
            let digit: UInt8
            switch byte {
            case ASCII.zero...ASCII.nine: digit = byte - ASCII.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpected(expecting: "a hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
