/// Reads one document piece by piece, for a caller that knows the shape it expects: the values
/// it wants come out without a `JSONValue` tree. Made for `POST /v1/events`, where building a
/// batch's tree, validating it and destroying it cost about a third of the server's
/// instructions per event (callgrind).
///
/// It lexes with ``JSONParser``'s own parser, so it is exactly as strict, and it fails (``read``
/// returns nil) on anything its caller did not ask for. Such a caller then parses the document
/// the general way, which also gives the error a client should see: whatever this reader
/// accepts, it reads as the general parser would.
///
/// ```swift
/// let name = JSONShapeReader.read(bytes, maxDepth: 32) { reader -> String? in
///     guard reader.enterObject(), reader.nextKey() == "name", let name = reader.string(),
///         reader.nextKey() == nil else { return nil }
///     return name
/// }
/// ```
package struct JSONShapeReader: ~Copyable {
    private var parser: Parser
    /// Objects and arrays open, counted as the parser counts them.
    private var depth = 0
    /// True right after a `{` or `[`: the next key or element has no comma before it.
    private var atStart = false
    /// Set by the first thing that was not as asked; every later call fails too.
    package private(set) var failed = false
    /// The member names of the objects `compactValue` has open, innermost last, to refuse a
    /// repeated one; kept across objects so that each does not allocate its own list.
    private var openNames: [String] = []

    private init(parser: Parser) { self.parser = parser }

    /// Runs `body` over the document in `bytes`. Nil when `body` returns nil, when the reader
    /// failed, or when anything but whitespace follows what `body` read.
    package static func read<T>(
        _ bytes: [UInt8], maxDepth: Int, _ body: (inout JSONShapeReader) -> T?
    ) -> T? {
        bytes.withUnsafeBufferPointer { buffer -> T? in
            // JSONParser refuses a byte order mark before the value; so does this.
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { return nil }
            var reader = JSONShapeReader(parser: Parser(input: buffer, maxDepth: maxDepth))
            guard let result = body(&reader), !reader.failed, reader.depth == 0 else { return nil }
            reader.parser.skipWhitespace()
            return reader.parser.position == buffer.count ? result : nil
        }
    }

    private mutating func fail() -> Bool {
        failed = true
        return false
    }

    /// Consumes `{` or `[` when it comes next.
    private mutating func enter(_ open: UInt8) -> Bool {
        guard !failed else { return false }
        parser.skipWhitespace()
        guard parser.peek() == open, depth < parser.maxDepth else { return fail() }
        parser.position += 1
        depth += 1
        atStart = true
        return true
    }

    /// Past a `,` before the next member or element; false at the closing `close` (consumed:
    /// the container is left) or on failure.
    private mutating func advance(closing close: UInt8) -> Bool {
        guard !failed else { return false }
        parser.skipWhitespace()
        if parser.peek() == close {
            parser.position += 1
            depth -= 1
            atStart = false
            return false
        }
        if atStart {
            atStart = false
            return true
        }
        guard parser.peek() == UInt8(ascii: ",") else { return fail() }
        parser.position += 1
        return true
    }

    /// Enters an object; read its members with ``nextKey()``.
    package mutating func enterObject() -> Bool { enter(UInt8(ascii: "{")) }

    /// Enters an array; step through its elements with ``nextElement()``.
    package mutating func enterArray() -> Bool { enter(UInt8(ascii: "[")) }

    /// The next member's name, positioned before its value (which the caller must read); nil
    /// when the object ends (it is left) or on failure (see ``failed``).
    package mutating func nextKey() -> String? {
        guard advance(closing: UInt8(ascii: "}")) else { return nil }
        do {
            return try parser.parseKey().0
        } catch {
            _ = fail()
            return nil
        }
    }

    /// True when another element follows, positioned before it (which the caller must read);
    /// false when the array ends (it is left) or on failure.
    package mutating func nextElement() -> Bool {
        advance(closing: UInt8(ascii: "]"))
    }

    /// A string value; nil (failed) for anything else.
    package mutating func string() -> String? {
        guard !failed else { return nil }
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "\""), let string = try? parser.parseString() else {
            _ = fail()
            return nil
        }
        return string
    }

    /// Consumes `null` when it comes next.
    package mutating func null() -> Bool {
        guard !failed else { return false }
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "n") else { return false }
        return (try? parser.expectLiteral("null")) != nil || fail()
    }

    /// Whether the next value is an object (nothing is consumed).
    package mutating func nextIsObject() -> Bool {
        parser.skipWhitespace()
        return !failed && parser.peek() == UInt8(ascii: "{")
    }

    /// Reads any value and appends its compact text to `output`: byte for byte what
    /// `JSONWriter.value` writes for the value the general parser would have built
    /// (members in their order, strings through the same writer, numbers as written). Refuses,
    /// as the parser does, a repeated member name and nesting past the depth limit.
    package mutating func compactValue(into output: inout JSONWriter) -> Bool {
        guard !failed else { return false }
        parser.skipWhitespace()
        guard let byte = parser.peek() else { return fail() }
        switch byte {
        case UInt8(ascii: "{"):
            guard enterObject() else { return false }
            output.append(UInt8(ascii: "{"))
            let first = openNames.count
            defer { openNames.removeSubrange(first...) }
            while let name = nextKey() {
                guard !openNames[first...].contains(name) else { return fail() }
                if openNames.count > first { output.append(UInt8(ascii: ",")) }
                openNames.append(name)
                output.string(name)
                output.append(UInt8(ascii: ":"))
                guard compactValue(into: &output) else { return false }
            }
            output.append(UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            guard enterArray() else { return false }
            output.append(UInt8(ascii: "["))
            var first = true
            while nextElement() {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                guard compactValue(into: &output) else { return false }
            }
            output.append(UInt8(ascii: "]"))
        case UInt8(ascii: "\""):
            let run: Range<Int>?
            do { run = try parser.scanString() } catch { return fail() }
            guard let run else {
                output.string(String(decoding: parser.scratch, as: UTF8.self))
                break
            }
            // No escape in the input means nothing to escape in the output: the parser refused
            // raw control characters, and a quote or backslash would have needed one. The
            // serializer would write these very bytes.
            output.append(UInt8(ascii: "\""))
            output.append(UnsafeBufferPointer(rebasing: parser.input[run]))
            output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard let number = try? parser.parseNumber() else { return fail() }
            output.number(number)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            let literal: StaticString =
                byte == UInt8(ascii: "t") ? "true" : byte == UInt8(ascii: "f") ? "false" : "null"
            guard (try? parser.expectLiteral(literal)) != nil else { return fail() }
            output.literal(literal)
        default:
            return fail()
        }
        return !failed
    }
}
