import HTTP1

/// The per-connection protocol logic, free of I/O (STYLE example 10): the shell feeds it bytes,
/// responses, write completions and timer expiries, and does whatever `Action` it returns.
///
/// One request is in flight at a time. While the application answers, the machine does not
/// parse further and asks the shell to stop reading; pipelined requests wait in the buffer and
/// are taken in order once the previous response is fully written (RFC 9112 §9.3.2).
struct ConnectionStateMachine {
    /// What the shell must do next. `Equatable`, so tests compare whole actions.
    enum Action: Equatable {
        /// Nothing now; read more if `wantsRead`.
        case none
        /// Write the interim `100 Continue` (`continueResponseBytes`), then go on reading.
        case sendContinue
        /// Hand this request to the application, then call `responseReady` with its answer.
        case deliver(HTTPRequest)
        /// Ask the application to render this refusal, then call `responseReady` with it.
        /// Boxed: a head inline made every action as large as a head, and every copy or
        /// destroy of one (several per request) a switch over all of its fields.
        indirect case renderError(HTTPParseError, HTTPRequestHead?)
        /// Close the connection. `graceful`: a response went out and the peer may still be
        /// sending, so shut down writing and drain before closing (avoids an RST eating the response).
        case close(graceful: Bool)
    }

    /// The limits the machine enforces, taken from the server's configuration (where the
    /// defaults are: `Limits(configuration)`); times in nanoseconds.
    struct Limits: Sendable {
        var parser: HTTPParserLimits
        var maxBodyBytes: Int
        var headerTimeout: UInt64
        var idleTimeout: UInt64
        var gzipMinimumBytes: Int
    }

    /// What the response to the current request needs to know about it.
    private struct ResponseContext {
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
        /// Receiving a head; the parser resumes from `point`.
        case readingHead(HTTPHeadResumePoint)
        /// Boxed, as `Action.renderError` is: a reader inline (a head, a chunk decoder and its
        /// limits) made the state ~200 bytes, and every request without a body copied and
        /// destroyed it several times (`memcpy`, ~800 instructions of a `/healthz`). A request
        /// with a body pays one box instead.
        indirect case readingBody(BodyReader)
        case awaitingResponse(ResponseContext)
        case writing(closeAfter: Bool)
        case closed
    }

    private let limits: Limits
    private var state: State = .readingHead(.start)
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Bytes of the current request seen; a timeout with none is a silent close, not a 408.
    private var requestStarted = false
    /// The last `Host` value found valid on this connection (`bodyFraming(of:validHost:)`).
    private var validHost: String?
    /// The field lines of the last head, and its fields, for a head that repeats them.
    private var lastFieldLines = RepeatedFieldLines()
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
        switch state {
        case .closed:
            return .none
        case .idle where readIndex == buffer.count, .readingHead where readIndex == buffer.count:
            return headStartingAt(bytes, now: now)
        default:
            break
        }
        if readIndex == buffer.count && !buffer.isEmpty {
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

    /// The application's (or the error renderer's) response to the request in flight: decides
    /// how it is framed (close after it? gzip?) and starts the write timeout. Returns nil if no
    /// request awaits a response. Serialize it with that framing, write it, then call
    /// `writeCompleted`.
    mutating func responseReady(_ response: HTTPResponse, now: UInt64) -> HTTPResponseFraming? {
        guard case .awaitingResponse(let context) = state else { return nil }
        let closeAfter =
            !context.keepAlive || draining || response.headers.containsToken("close", inField: "Connection")
        // Worth compressing: the client takes gzip, the body is long enough, it is not encoded yet.
        let gzip =
            context.acceptsGzip && response.status.allowsContent
            && response.body.count >= limits.gzipMinimumBytes && !response.headers.contains("Content-Encoding")
        state = .writing(closeAfter: closeAfter)
        // A peer that stops reading our response must not hold the connection forever.
        deadline = now &+ limits.idleTimeout
        return HTTPResponseFraming(
            requestVersion: context.version, isHead: context.isHead, closing: closeAfter, gzip: gzip)
    }

    /// Everything queued has been written.
    mutating func writeCompleted(now: UInt64) -> Action {
        guard case .writing(let closeAfter) = state else { return .none }
        if closeAfter { return close(graceful: true) }
        requestStarted = false
        if readIndex == buffer.count {
            // Release a large buffer so an idle keep-alive connection stays small.
            if buffer.capacity > 2048 {
                buffer = []
            } else if !buffer.isEmpty {
                buffer.removeAll(keepingCapacity: true)
            }
            readIndex = 0
            state = .idle
            deadline = now &+ limits.idleTimeout
            return .none
        }
        // A pipelined request is already buffered: its clock starts now.
        state = .readingHead(.start)
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
            return fail(.requestTimeout, head: nil)
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

    /// Bytes that begin a request, nothing buffered before them (nearly every read): the head is
    /// parsed where the socket's bytes lie, and only what follows it (a body, a pipelined
    /// request) or a head cut short is copied into the buffer. Copying every read into the
    /// buffer, and emptying it after the answer, was ~200 instructions of a `/healthz`.
    private mutating func headStartingAt(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Action {
        if case .idle = state { beginHead(now: now) }
        requestStarted = true
        if !buffer.isEmpty { buffer.removeAll(keepingCapacity: true) }
        readIndex = 0
        let result = parseRequestHead(bytes, limits: limits.parser, resumingFrom: .start, repeating: &lastFieldLines)
        switch consume result {
        case .needMore(let point):
            // The parser resumes over the same bytes from the start, with more after them.
            buffer.append(contentsOf: bytes)
            state = .readingHead(point)
            return .none
        case .invalid(let error):
            return fail(error, head: nil)
        case .complete(let head, let consumed):
            if consumed < bytes.count {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
            }
            if let action = startBody(head: head) { return action }
            return process(now: now)
        }
    }

    /// Bytes of a new request came while idle: its head's timeout runs from now.
    private mutating func beginHead(now: UInt64) {
        state = .readingHead(.start)
        deadline = now &+ limits.headerTimeout
    }

    private mutating func process(now: UInt64) -> Action {
        while true {
            switch state {
            case .idle:
                guard readIndex < buffer.count else { return .none }
                beginHead(now: now)
            case .readingHead(let point):
                guard readIndex < buffer.count else { return .none }
                requestStarted = true
                let result = buffer.withUnsafeBytes { all in
                    parseRequestHead(
                        UnsafeRawBufferPointer(rebasing: all[readIndex...]), limits: limits.parser, resumingFrom: point,
                        repeating: &lastFieldLines)
                }
                // Consumed, and the head passed on owned down to the request it becomes: each copy
                // of a head on the way retained and released its fields.
                switch consume result {
                case .needMore(let point):
                    state = .readingHead(point)
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
    private mutating func startBody(head: consuming HTTPRequestHead) -> Action? {
        let framing: HTTPBodyFraming
        switch bodyFraming(of: head, validHost: &validHost) {
        case .success(let value): framing = value
        case .failure(let error): return fail(error, head: head)
        }
        let context = ResponseContext(
            version: head.version, isHead: head.method == .HEAD,
            keepAlive: head.keepAlive, acceptsGzip: head.headers.acceptsGzip)

        var decompressor: Decompressor?
        if framing.announcesBody {
            switch head.headers.contentCoding {
            case .identity: break
            case .gzip: decompressor = Decompressor(limit: limits.maxBodyBytes)
            case .unsupported: return fail(.unsupportedContentCoding, head: head)
            }
        }

        let readerFraming: BodyReader.Framing
        switch framing {
        case .none, .contentLength(0):
            return deliver(head: head, body: [], context: context)
        case .contentLength(let length):
            // Refuse before reading a byte of it; the connection closes because the body stays unread.
            if length > limits.maxBodyBytes { return fail(.payloadTooLarge, head: head) }
            readerFraming = .length(remaining: length)
        case .chunked:
            // Each declared chunk size is checked against the limit as it is read (413 at once).
            readerFraming = .chunked(ChunkedBodyDecoder(limits: limits.parser, maxBodyBytes: limits.maxBodyBytes))
        }
        // RFC 9110 §10.1.1: send 100 only if the client waits for it and nothing of the body came yet.
        let sendsContinue =
            head.version == .http1_1 && readIndex == buffer.count
            && head.headers.containsToken("100-continue", inField: "Expect")
        state = .readingBody(
            BodyReader(head: head, context: context, framing: readerFraming, decompressor: decompressor))
        return sendsContinue ? .sendContinue : nil
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

    private func append(_ bytes: UnsafeRawBufferPointer, to reader: inout BodyReader) -> HTTPParseError? {
        reader.rawBytes += bytes.count
        if reader.rawBytes > limits.maxBodyBytes { return HTTPParseError.payloadTooLarge }
        guard let decompressor = reader.decompressor else {
            reader.body.append(contentsOf: bytes)
            return nil
        }
        do {
            try decompressor.inflate(bytes, into: &reader.body)
            return nil
        } catch .tooLarge {
            return HTTPParseError.payloadTooLarge
        } catch {
            return HTTPParseError.corruptGzip
        }
    }

    private func finish(_ reader: inout BodyReader) -> BodyOutcome {
        if let decompressor = reader.decompressor, !decompressor.finished { return .failed(HTTPParseError.corruptGzip) }
        return .complete
    }

    // MARK: - Transitions

    private mutating func deliver(head: consuming HTTPRequestHead, body: [UInt8], context: ResponseContext) -> Action {
        // Compact: keep only what belongs to later (pipelined) requests. When nothing does (the
        // usual case) the buffer is left for `writeCompleted`, which empties it anyway: removing
        // the whole range here too cost ~200 instructions a request.
        if readIndex > 0 && readIndex < buffer.count {
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
}
