import StringBytes

// The HTTP/1.1 wire vocabulary shared by the parser, the server and the tests.
// Pure values: no sockets, no Foundation.

/// A request method token (RFC 9110 §9). Compared case-sensitively, as the RFC requires.
package struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: String
    /// Which of the methods below this is, 0 for any other token. Two methods compare by it, not
    /// by their text: every request compares its method half a dozen times (routing, HEAD, the
    /// idempotency check), and each String comparison of two different methods went through
    /// the runtime's slow path (~550 instructions a request, callgrind).
    @usableFromInline let known: UInt8

    package init(rawValue: String) {
        self.rawValue = rawValue
        known = Self.all.first(where: { $0.rawValue == rawValue })?.known ?? 0
    }

    private init(_ rawValue: String, known: UInt8) {
        self.rawValue = rawValue
        self.known = known
    }

    package var description: String { rawValue }

    /// Inlined into other modules: a call retained and released both methods' text around it.
    @inlinable
    package static func == (a: HTTPMethod, b: HTTPMethod) -> Bool {
        a.known == b.known && (a.known != 0 || a.rawValue == b.rawValue)
    }

    package func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    package static let GET = HTTPMethod("GET", known: 1)
    package static let HEAD = HTTPMethod("HEAD", known: 2)
    package static let POST = HTTPMethod("POST", known: 3)
    package static let PUT = HTTPMethod("PUT", known: 4)
    package static let PATCH = HTTPMethod("PATCH", known: 5)
    package static let DELETE = HTTPMethod("DELETE", known: 6)
    package static let OPTIONS = HTTPMethod("OPTIONS", known: 7)
    private static let all: [HTTPMethod] = [.GET, .HEAD, .POST, .PUT, .PATCH, .DELETE, .OPTIONS]
}

/// `HTTP/major.minor`. Only 1.0 and 1.1 are served; others answer 505.
package struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    package var major: Int
    package var minor: Int
    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    package static let http1_0 = HTTPVersion(major: 1, minor: 0)
    package static let http1_1 = HTTPVersion(major: 1, minor: 1)
    package var description: String { "HTTP/\(major).\(minor)" }
}

/// One header field, as sent or to be sent.
///
/// A struct, not a `(name:, value:)` tuple: an array of tuples is destroyed through the
/// runtime's generic tuple witness, element by element (~150 instructions a field, callgrind),
/// where a struct's own destroy releases its two strings directly.
package struct HTTPField: Sendable, Hashable {
    package var name: String { didSet { isClean = false } }
    package var value: String { didSet { isClean = false } }
    /// Made by `init(cleanName:value:)` and not changed since: the serializer writes it as it is,
    /// without sanitising it or asking whether it is one of the framing fields it owns.
    package private(set) var isClean = false

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// A field of the server's own making (the envelope's `Content-Type`, a checked
    /// `X-Request-Id`): no CR, LF or NUL in either part, and none of the framing fields the
    /// serializer owns. `serializeResponse` checks both in debug builds only: its point is that
    /// a response's every field was being sanitised and classified again (~500 instructions of
    /// each answer, callgrind).
    package init(cleanName name: String, value: String) {
        self.name = name
        self.value = value
        isClean = true
    }

    /// Equal by name and value: whether it was made clean does not change what it says.
    package static func == (lhs: HTTPField, rhs: HTTPField) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(value)
    }
}

/// Header fields in arrival order. Names compare ASCII case-insensitively; duplicates are kept
/// so the framing checks can see them (RFC 9112 §6.3).
package struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, Equatable {
    package private(set) var fields: [HTTPField] = []

    package init() {}
    package init(fields: [HTTPField]) { self.fields = fields }
    package init(_ fields: [(name: String, value: String)]) {
        self.fields = fields.map { HTTPField(name: $0.name, value: $0.value) }
    }
    package init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { HTTPField(name: $0.0, value: $0.1) }
    }

    package var count: Int { fields.count }

    package mutating func add(name: String, value: String) { fields.append(HTTPField(name: name, value: value)) }

    /// Replaces every field of this name with one.
    package mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append(HTTPField(name: name, value: value))
    }

    package mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// The first value of the field, or nil.
    package subscript(_ name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Every value of the field, in order.
    package func values(_ name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    package func contains(_ name: String) -> Bool { self[name] != nil }

    /// The same fields in the same order, names and values exactly as sent (for tests).
    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields == rhs.fields
    }

    package func makeIterator() -> IndexingIterator<[HTTPField]> {
        fields.makeIterator()
    }

    /// ASCII case-insensitive comparison; field names are tokens, so ASCII is all there is.
    package static func namesEqual(_ a: String, _ b: String) -> Bool {
        // Most names compared differ in length; `utf8.count` knows that without reaching the bytes.
        guard a.utf8.count == b.utf8.count else { return false }
        return withUTF8Bytes(a) { x in withUTF8Bytes(b) { y in asciiCaseInsensitiveEqual(x, y) } }
    }

    /// `namesEqual` against a name of our own, without making it a String.
    package static func namesEqual(_ a: String, _ b: StaticString) -> Bool {
        guard a.utf8.count == b.utf8CodeUnitCount else { return false }
        return withUTF8Bytes(a) { equalsIgnoringCase($0, b) }
    }

    /// `namesEqual` for bytes already in a buffer (a token inside a field value).
    ///
    /// Eight bytes at a time while both are ASCII: a byte-by-byte walk was ~15 instructions a
    /// byte, and `Authorization` is looked for on every authenticated request (callgrind).
    package static func asciiCaseInsensitiveEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        let count = a.count
        var at = 0
        if count >= 8 {
            // Whole words, the last one overlapping the one before when the count is not a
            // multiple of eight; bytes at or past 0x80 are left to the byte loop below.
            while true {
                let wx = UnsafeRawPointer(x + at).loadUnaligned(as: UInt64.self)
                let wy = UnsafeRawPointer(y + at).loadUnaligned(as: UInt64.self)
                if wx != wy {
                    guard (wx | wy) & 0x8080_8080_8080_8080 == 0 else { break }
                    guard asciiLowercased(wx) == asciiLowercased(wy) else { return false }
                }
                if at &+ 8 == count { return true }
                at = Swift.min(at &+ 8, count &- 8)
            }
        }
        while at < count {
            if asciiLowercased(x[at]) != asciiLowercased(y[at]) { return false }
            at &+= 1
        }
        return true
    }

    /// The eight bytes with `A`–`Z` made lowercase; every byte must be below 0x80, so no sum
    /// below carries into the next byte. A byte's high bit in `w + 0x3F…` says it is at least
    /// `A`, in `w + 0x25…` that it is past `Z`.
    @inline(__always)
    private static func asciiLowercased(_ w: UInt64) -> UInt64 {
        let upper = (w &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(w &+ 0x2525_2525_2525_2525) & 0x8080_8080_8080_8080
        return w | (upper &>> 2)
    }

    @inline(__always)
    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }
}

/// A response status code with its reason phrase.
package struct HTTPStatus: Hashable, Sendable {
    package var code: Int
    package init(_ code: Int) { self.code = code }

    package static let ok = HTTPStatus(200)
    package static let created = HTTPStatus(201)
    package static let noContent = HTTPStatus(204)
    package static let badRequest = HTTPStatus(400)
    package static let unauthorized = HTTPStatus(401)
    package static let forbidden = HTTPStatus(403)
    package static let notFound = HTTPStatus(404)
    package static let methodNotAllowed = HTTPStatus(405)
    package static let requestTimeout = HTTPStatus(408)
    package static let conflict = HTTPStatus(409)
    package static let lengthRequired = HTTPStatus(411)
    package static let unprocessableContent = HTTPStatus(422)
    package static let payloadTooLarge = HTTPStatus(413)
    package static let uriTooLong = HTTPStatus(414)
    package static let unsupportedMediaType = HTTPStatus(415)
    package static let tooManyRequests = HTTPStatus(429)
    package static let headersTooLarge = HTTPStatus(431)
    package static let internalServerError = HTTPStatus(500)
    package static let notImplemented = HTTPStatus(501)
    package static let serviceUnavailable = HTTPStatus(503)
    package static let httpVersionNotSupported = HTTPStatus(505)

    /// The reason phrase written on the status line.
    package var reasonPhrase: StaticString {
        switch code {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Unknown"
        }
    }
}

/// Size limits of the wire format (head, chunked framing). Defaults are the documented ones
/// (README, "Limits"); the body and time limits are `HTTPServer.Configuration`'s.
package struct HTTPParserLimits: Sendable {
    /// Longest request target; longer answers 414.
    package var maxTargetLength: Int = 8 * 1024
    /// Largest header section (request line included); larger answers 431.
    package var maxHeaderSectionBytes: Int = 32 * 1024
    /// Most header fields; more answers 431.
    package var maxHeaderCount: Int = 100
    /// Longest method; longer answers 501 (RFC 9112 §3). Registered methods have at most 17 bytes.
    package var maxMethodLength: Int = 32
    /// Most empty lines (CRLF) ignored before a request line (RFC 9112 §2.2); more answers 400.
    package var maxLeadingEmptyLines: Int = 8
    /// Most bytes of a chunked body's trailer section; more answers 431.
    package var maxTrailerBytes: Int = 8 * 1024
    /// Most bytes of chunk extensions on one size line; more answers 400.
    package var maxChunkExtensionBytes: Int = 1024
    package init() {}
}

/// A parsed request line and header section. Header values have surrounding whitespace trimmed.
package struct HTTPRequestHead: Sendable, Equatable {
    package var method: HTTPMethod
    /// The request target exactly as sent (origin-form: path and optional `?query`).
    package var target: String
    package var version: HTTPVersion
    package var headers: HTTPHeaders

    package init(method: HTTPMethod, target: String, version: HTTPVersion, headers: HTTPHeaders) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The path part of the target, before any `?`.
    package var path: Substring {
        queryMark.map { target[..<$0] } ?? target[...]
    }

    /// The query after `?`, if any.
    package var query: Substring? {
        queryMark.map { target[target.utf8.index(after: $0)...] }
    }

    /// Where `?` is. Searched in the UTF-8 bytes: an ASCII byte needs no grapheme breaking, and
    /// a buffer scan is a few instructions a byte where the UTF-8 view's indices were ~20.
    private var queryMark: String.Index? {
        guard let offset = withUTF8Bytes(target, { $0.firstIndex(of: UInt8(ascii: "?")) }) else { return nil }
        return target.utf8.index(target.utf8.startIndex, offsetBy: offset)
    }
}

/// How the body that follows a head is delimited (RFC 9112 §6).
package enum HTTPBodyFraming: Hashable, Sendable {
    case none
    case contentLength(Int)
    case chunked

    /// Whether the head announced a body (`Content-Length: 0` included). Asked instead of
    /// `!= .none`, which another module reaches through the `Equatable` witness table.
    package var announcesBody: Bool {
        if case .none = self { return false }
        return true
    }
}
