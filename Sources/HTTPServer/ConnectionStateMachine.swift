import HTTP1

/// The per-connection protocol logic, free of I/O (STYLE example 10): the shell feeds it bytes,
/// responses, write completions and timer expiries, and does whatever `Action` it returns.
///
/// One request is in flight at a time. While the application answers, the machine does not
/// parse further and asks the shell to stop reading; pipelined requests wait in the buffer and
/// are taken in order once the previous response is fully written (RFC 9112 §9.3.2).
struct ConnectionStateMachine {
    /// What the shell must do next.
    enum Action {
        /// Nothing now; read more if `wantsRead`.
        case none
        /// Queue these bytes for writing, then call `writeCompleted` once everything queued is out.
        case write([UInt8])
        /// Hand this request to the application, then call `responseReady` with its answer.
        case deliver(HTTPRequest)
        /// Ask the application to render this refusal, then call `responseReady` with it.
        case renderError(HTTPParseError, HTTPRequestHead?)
        /// Close the connection. `graceful`: a response went out and the peer may still be
        /// sending, so shut down writing and drain before closing (avoids an RST eating the response).
        case close(graceful: Bool)
    }

    /// The limits the machine enforces, in nanoseconds where they are times.
    struct Limits {
        var parser = HTTPParserLimits()
        var maxBodyBytes = 1024 * 1024
        var headerTimeout: UInt64 = 10_000_000_000
        var idleTimeout: UInt64 = 60_000_000_000
        var gzipMinimumBytes = 1024
    }

    /// What the response to the current request needs to know about it.
    struct ResponseContext {
        var version: HTTPVersion
        var isHead: Bool
        var keepAlive: Bool
        var acceptsGzip: Bool
    }

    private struct BodyReader {
        enum Framing {
            case length(remaining: Int)
            case chunked(ChunkedBodyDecoder)
        }
        var head: HTTPRequestHead
        var context: ResponseContext
        var framing: Framing
        var body: [UInt8] = []
        var rawBytes = 0
        var decompressor: Decompressor?
    }

    private enum State {
        /// Between requests with nothing buffered.
        case idle
        /// Receiving a head; `scanned` is the parser's resume point.
        case readingHead(scanned: Int)
        case readingBody(BodyReader)
        case awaitingResponse(ResponseContext)
        case writing(closeAfter: Bool)
        case closed
    }

    /// The interim response of RFC 9110 §10.1.1.
    static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private let limits: Limits
    private var state: State = .readingHead(scanned: 0)
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Bytes of the current request seen; a timeout with none is a silent close, not a 408.
    private var requestStarted = false
    private var draining = false
    /// When the shell should call `timerFired`, if at all.
    private(set) var deadline: UInt64?

    /// A machine for a just-accepted connection: the header timeout runs from `now`.
    init(limits: Limits, now: UInt64) {
        self.limits = limits
        deadline = now &+ limits.headerTimeout
    }

    /// Whether the shell should keep reading the socket.
    var wantsRead: Bool {
        switch state {
        case .idle, .readingHead, .readingBody: true
        case .awaitingResponse, .writing, .closed: false
        }
    }

    /// Between requests with nothing buffered: safe to close when draining.
    var isIdle: Bool {
        switch state {
        case .idle: true
        case .readingHead: !requestStarted
        default: false
        }
    }

    /// Bytes held for unparsed input (for memory accounting in tests).
    var bufferCapacity: Int { buffer.capacity }

    // MARK: - Inputs

    /// New bytes from the socket.
    mutating func bytesRead(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Action {
        guard !bytes.isEmpty else { return .none }
        if case .closed = state { return .none }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
        return process(now: now)
    }

    /// The peer closed its sending side.
    mutating func endOfInput(now: UInt64) -> Action {
        switch state {
        case .idle:
            return close(graceful: false)
        case .readingHead, .readingBody:
            // A request cut short cannot be answered meaningfully (RFC 9112 §8: incomplete message).
            return close(graceful: false)
        case .awaitingResponse, .writing:
            // Half-close after a full request is legal; answer, then close.
            draining = true
            if case .writing = state { state = .writing(closeAfter: true) }
            return .none
        case .closed:
            return .none
        }
    }

    /// The application's (or the error renderer's) response to the request in flight, as a
    /// `.write` of its own bytes.
    mutating func responseReady(_ response: HTTPResponse, date: String, now: UInt64) -> Action {
        var bytes: [UInt8] = []
        guard responseReady(response, date: date, now: now, into: &bytes) else { return .none }
        return .write(bytes)
    }

    /// The response to the request in flight, appended to `output` (the shell's reusable buffer,
    /// so no array is allocated per response). Returns false, writing nothing, if no request
    /// awaits one. Once the bytes are written, call `writeCompleted` as after a `.write`.
    mutating func responseReady(_ response: HTTPResponse, date: String, now: UInt64, into output: inout [UInt8]) -> Bool
    {
        guard case .awaitingResponse(let context) = state else { return false }
        let closeAfter = !context.keepAlive || draining || Self.hasToken(response.headers, "Connection", "close")
        serialize(response, context: context, closing: closeAfter, date: date, into: &output)
        state = .writing(closeAfter: closeAfter)
        // A peer that stops reading our response must not hold the connection forever.
        deadline = now &+ limits.idleTimeout
        return true
    }

    /// Everything queued has been written.
    mutating func writeCompleted(now: UInt64) -> Action {
        guard case .writing(let closeAfter) = state else { return .none }
        if closeAfter { return close(graceful: true) }
        requestStarted = false
        if readIndex == buffer.count {
            // Release a large buffer so an idle keep-alive connection stays small.
            if buffer.capacity > 2048 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
            readIndex = 0
            state = .idle
            deadline = now &+ limits.idleTimeout
            return .none
        }
        // A pipelined request is already buffered: its clock starts now.
        state = .readingHead(scanned: 0)
        deadline = now &+ limits.headerTimeout
        return process(now: now)
    }

    /// The deadline passed (the shell may call early or late; the machine re-checks).
    mutating func timerFired(now: UInt64) -> Action {
        guard let deadline, now >= deadline else { return .none }
        switch state {
        case .idle:
            return close(graceful: false)
        case .readingHead where !requestStarted:
            return close(graceful: false)
        case .readingHead(_), .readingBody:
            return fail(
                HTTPParseError(
                    status: .requestTimeout, code: "request_timeout", reason: "request not received in time"), head: nil
            )
        case .writing:
            return close(graceful: false)
        case .awaitingResponse, .closed:
            self.deadline = nil
            return .none
        }
    }

    /// Server shutdown: finish what is in flight, close what is idle.
    mutating func beginDrain() -> Action {
        draining = true
        return isIdle ? close(graceful: false) : .none
    }

    // MARK: - Parsing

    private mutating func process(now: UInt64) -> Action {
        while true {
            switch state {
            case .idle:
                guard readIndex < buffer.count else { return .none }
                state = .readingHead(scanned: 0)
                deadline = now &+ limits.headerTimeout
            case .readingHead(let scanned):
                guard readIndex < buffer.count else { return .none }
                requestStarted = true
                let result = buffer.withUnsafeBytes { all in
                    parseRequestHead(
                        UnsafeRawBufferPointer(rebasing: all[readIndex...]), limits: limits.parser, scanned: scanned)
                }
                switch result {
                case .needMore(let scanned):
                    state = .readingHead(scanned: scanned)
                    return .none
                case .invalid(let error):
                    return fail(error, head: nil)
                case .complete(let head, let consumed):
                    readIndex += consumed
                    if let action = startBody(head: head) { return action }
                }
            case .readingBody(var reader):
                guard readIndex < buffer.count else { return .none }
                state = .closed  // keep `reader` uniquely referenced while it is mutated
                let outcome = readBody(&reader)
                switch outcome {
                case .needMore:
                    state = .readingBody(reader)
                    return .none
                case .complete:
                    return deliver(head: reader.head, body: reader.body, context: reader.context)
                case .failed(let error):
                    state = .readingBody(reader)
                    return fail(error, head: reader.head)
                }
            case .awaitingResponse, .writing, .closed:
                return .none
            }
        }
    }

    /// Decides framing and content coding for a parsed head. Returns an action, or nil when
    /// the state now reads a body from the buffer.
    private mutating func startBody(head: HTTPRequestHead) -> Action? {
        let framing: HTTPBodyFraming
        switch bodyFraming(of: head) {
        case .success(let value): framing = value
        case .failure(let error): return fail(error, head: head)
        }
        let context = ResponseContext(
            version: head.version, isHead: head.method == .HEAD,
            keepAlive: Self.keepAlive(head), acceptsGzip: Self.acceptsGzip(head.headers))

        var decompressor: Decompressor?
        if framing != .none {
            switch Self.contentCoding(head.headers) {
            case .identity: break
            case .gzip: decompressor = Decompressor(limit: limits.maxBodyBytes)
            case .unsupported:
                return fail(
                    HTTPParseError(
                        status: .unsupportedMediaType, code: "unsupported_media_type",
                        reason: "only gzip and identity content codings are accepted"), head: head)
            }
        }

        let readerFraming: BodyReader.Framing
        switch framing {
        case .none, .contentLength(0):
            return deliver(head: head, body: [], context: context)
        case .contentLength(let length):
            // Refuse before reading a byte of it; the connection closes because the body stays unread.
            if length > limits.maxBodyBytes { return fail(Self.tooLarge, head: head) }
            readerFraming = .length(remaining: length)
        case .chunked:
            readerFraming = .chunked(ChunkedBodyDecoder())
        }
        state = .readingBody(
            BodyReader(head: head, context: context, framing: readerFraming, decompressor: decompressor))
        // RFC 9110 §10.1.1: send 100 only if the client waits for it and nothing of the body came yet.
        if head.version == .http1_1, readIndex == buffer.count,
            Self.hasToken(head.headers, "Expect", "100-continue")
        {
            return .write(Self.continueBytes)
        }
        return nil
    }

    private enum BodyOutcome {
        case needMore, complete
        case failed(HTTPParseError)
    }

    private mutating func readBody(_ reader: inout BodyReader) -> BodyOutcome {
        switch reader.framing {
        case .length(let remaining):
            let take = min(remaining, buffer.count - readIndex)
            let start = readIndex
            readIndex += take
            if let error = buffer.withUnsafeBytes({
                append(UnsafeRawBufferPointer(rebasing: $0[start..<start + take]), to: &reader)
            }) {
                return .failed(error)
            }
            reader.framing = .length(remaining: remaining - take)
            return remaining == take ? finish(&reader) : .needMore
        case .chunked(var decoder):
            let start = readIndex
            let (step, error) = buffer.withUnsafeBytes { all -> (ChunkedBodyDecoder.Step, HTTPParseError?) in
                let input = UnsafeRawBufferPointer(rebasing: all[start...])
                let step = decoder.decode(input)
                let ranges: [Range<Int>]
                switch step {
                case .progress(_, let data), .done(_, let data): ranges = data
                case .invalid: return (step, nil)
                }
                for range in ranges {
                    if let error = append(UnsafeRawBufferPointer(rebasing: input[range]), to: &reader) {
                        return (step, error)
                    }
                }
                return (step, nil)
            }
            if let error { return .failed(error) }
            reader.framing = .chunked(decoder)
            switch step {
            case .invalid(let error):
                return .failed(error)
            case .progress(let consumed, _):
                readIndex += consumed
                return .needMore
            case .done(let consumed, _):
                readIndex += consumed
                return finish(&reader)
            }
        }
    }

    private static let tooLarge = HTTPParseError(
        status: .payloadTooLarge, code: "payload_too_large", reason: "request body too large")
    private static let corruptGzip = HTTPParseError.badRequest("request body is not valid gzip")

    private func append(_ bytes: UnsafeRawBufferPointer, to reader: inout BodyReader) -> HTTPParseError? {
        reader.rawBytes += bytes.count
        if reader.rawBytes > limits.maxBodyBytes { return Self.tooLarge }
        guard let decompressor = reader.decompressor else {
            reader.body.append(contentsOf: bytes)
            return nil
        }
        do {
            try decompressor.inflate(bytes, into: &reader.body)
            return nil
        } catch .tooLarge {
            return Self.tooLarge
        } catch {
            return Self.corruptGzip
        }
    }

    private func finish(_ reader: inout BodyReader) -> BodyOutcome {
        if let decompressor = reader.decompressor, !decompressor.finished { return .failed(Self.corruptGzip) }
        return .complete
    }

    // MARK: - Transitions

    private mutating func deliver(head: HTTPRequestHead, body: [UInt8], context: ResponseContext) -> Action {
        // Compact: keep only what belongs to later (pipelined) requests.
        if readIndex > 0 {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        state = .awaitingResponse(context)
        deadline = nil
        return .deliver(HTTPRequest(head: head, body: body))
    }

    /// After a refusal the framing can no longer be trusted: answer, then close.
    private mutating func fail(_ error: HTTPParseError, head: HTTPRequestHead?) -> Action {
        state = .awaitingResponse(
            ResponseContext(
                version: head?.version ?? .http1_1, isHead: head?.method == .HEAD, keepAlive: false, acceptsGzip: false)
        )
        deadline = nil
        return .renderError(error, head)
    }

    private mutating func close(graceful: Bool) -> Action {
        state = .closed
        deadline = nil
        buffer = []
        readIndex = 0
        return .close(graceful: graceful)
    }

    /// Puts the machine in the state of a refused request (used to render the
    /// maxConnections refusal with the same header rules).
    mutating func forceAwaiting() {
        state = .awaitingResponse(
            ResponseContext(version: .http1_1, isHead: false, keepAlive: false, acceptsGzip: false))
    }

    // MARK: - Response bytes

    /// The response's own fields are written straight into the output buffer, minus the framing
    /// ones we set ourselves; the headers array is never copied or edited per request.
    private func serialize(
        _ response: HTTPResponse, context: ResponseContext, closing: Bool, date: String, into bytes: inout [UInt8]
    ) {
        var body = response.body
        let code = response.status.code
        // RFC 9110 §8.6: no Content-Length (and no body) on 1xx and 204.
        let bodyless = (100..<200).contains(code) || code == 204
        var gzipped = false
        if bodyless {
            body = []
        } else if code != 304, context.acceptsGzip, body.count >= limits.gzipMinimumBytes,
            !response.headers.contains("Content-Encoding"), let compressed = Compressor.gzip(body)
        {
            body = compressed
            gzipped = true
        }
        bytes.reserveCapacity(bytes.count + 256 + (context.isHead ? 0 : body.count))
        appendStatusLine(version: .http1_1, status: response.status, to: &bytes)
        var hasDate = false
        var variesByEncoding = false
        for field in response.headers {
            let name = field.name
            if HTTPHeaders.namesEqual(name, "Content-Length") || HTTPHeaders.namesEqual(name, "Transfer-Encoding")
                || HTTPHeaders.namesEqual(name, "Connection")
            {
                continue
            }
            if HTTPHeaders.namesEqual(name, "Date") { hasDate = true }
            if gzipped, HTTPHeaders.namesEqual(name, "Vary"), Self.hasToken([field.value], "accept-encoding") {
                variesByEncoding = true
            }
            appendHeaderField(name: name, value: field.value, to: &bytes)
        }
        if gzipped {
            appendHeaderField(name: "Content-Encoding", value: "gzip", to: &bytes)
            if !variesByEncoding { appendHeaderField(name: "Vary", value: "Accept-Encoding", to: &bytes) }
        }
        if !bodyless && code != 304 {
            // For HEAD this is the length the GET body would have had (RFC 9110 §9.3.2).
            appendHeaderField(name: "Content-Length", value: String(body.count), to: &bytes)
        }
        if !hasDate { appendHeaderField(name: "Date", value: date, to: &bytes) }
        if closing {
            appendHeaderField(name: "Connection", value: "close", to: &bytes)
        } else if context.version == .http1_0 {
            // RFC 9112 §9.3: a 1.0 client only keeps the connection if we say so.
            appendHeaderField(name: "Connection", value: "keep-alive", to: &bytes)
        }
        bytes.append(contentsOf: "\r\n".utf8)  // end of the head
        if !context.isHead { bytes.append(contentsOf: body) }
    }

    // MARK: - Header semantics

    /// RFC 9112 §9.3: 1.1 persists unless `close`; 1.0 only with `keep-alive`.
    static func keepAlive(_ head: HTTPRequestHead) -> Bool {
        if hasToken(head.headers, "Connection", "close") { return false }
        if head.version == .http1_1 { return true }
        return head.version == .http1_0 && hasToken(head.headers, "Connection", "keep-alive")
    }

    /// Whether `Accept-Encoding` allows gzip with a non-zero q (RFC 9110 §12.5.3).
    static func acceptsGzip(_ headers: HTTPHeaders) -> Bool {
        var gzipQ: Double?
        var starQ: Double?
        for field in headers where HTTPHeaders.namesEqual(field.name, "Accept-Encoding") {
            for element in field.value.split(separator: ",") {
                let parts = element.split(separator: ";")
                guard let first = parts.first else { continue }
                let coding = first.trimmingASCIISpaces().lowercased()
                var q = 1.0
                for parameter in parts.dropFirst() {
                    let pair = parameter.trimmingASCIISpaces().lowercased()
                    if pair.hasPrefix("q=") { q = Double(pair.dropFirst(2)) ?? 0 }
                }
                if coding == "gzip" || coding == "x-gzip" { gzipQ = max(gzipQ ?? 0, q) }
                if coding == "*" { starQ = q }
            }
        }
        if let gzipQ { return gzipQ > 0 }
        return (starQ ?? 0) > 0
    }

    enum ContentCoding { case identity, gzip, unsupported }

    /// The request body's content coding (RFC 9110 §8.4); only one layer of gzip is supported.
    static func contentCoding(_ headers: HTTPHeaders) -> ContentCoding {
        var codings: [String] = []
        for field in headers where HTTPHeaders.namesEqual(field.name, "Content-Encoding") {
            for element in field.value.split(separator: ",") {
                let coding = element.trimmingASCIISpaces().lowercased()
                if !coding.isEmpty && coding != "identity" { codings.append(coding) }
            }
        }
        if codings.isEmpty { return .identity }
        if codings.count == 1, codings[0] == "gzip" || codings[0] == "x-gzip" { return .gzip }
        return .unsupported
    }

    /// `hasToken` over the values of field `name`, without collecting them into an array.
    static func hasToken(_ headers: HTTPHeaders, _ name: String, _ token: String) -> Bool {
        headers.contains { HTTPHeaders.namesEqual($0.name, name) && hasToken(in: $0.value, token) }
    }

    /// Whether a comma-separated header lists `token`, ASCII case-insensitively.
    static func hasToken(_ values: [String], _ token: String) -> Bool {
        values.contains { hasToken(in: $0, token) }
    }

    /// One field value. An ASCII value (nearly all) is scanned as bytes, with no substrings;
    /// any other is split by Character as before, where a comma followed by a combining mark
    /// is not a separator.
    static func hasToken(in value: String, _ token: String) -> Bool {
        var contiguous = value
        let scanned = contiguous.withUTF8 { bytes -> Bool? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var elementStart = 0
            while elementStart <= bytes.count {
                var elementEnd = elementStart
                while elementEnd < bytes.count, bytes[elementEnd] != UInt8(ascii: ",") { elementEnd += 1 }
                var start = elementStart
                var end = elementEnd
                while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") {
                    start += 1
                }
                while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") {
                    end -= 1
                }
                if asciiCaseInsensitiveEqual(UnsafeBufferPointer(rebasing: bytes[start..<end]), token) { return true }
                elementStart = elementEnd + 1
            }
            return false
        }
        if let scanned { return scanned }
        return value.split(separator: ",").contains { HTTPHeaders.namesEqual(String($0.trimmingASCIISpaces()), token) }
    }

    private static func asciiCaseInsensitiveEqual(_ bytes: UnsafeBufferPointer<UInt8>, _ token: String) -> Bool {
        var token = token
        return token.withUTF8 { HTTPHeaders.asciiCaseInsensitiveEqual(bytes, $0) }
    }
}

extension Substring {
    fileprivate func trimmingASCIISpaces() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
