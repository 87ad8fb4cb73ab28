import HTTP1
import Reactor
import Synchronization
import Threads

/// Per-loop state shared by the connections on that loop. Confined to the loop's thread, so,
/// like ``HTTPConnection``'s, its stored properties skip the run-time exclusivity checks.
final class LoopContext: @unchecked Sendable {
    let loop: EventLoop
    let server: ServerShared
    /// One read buffer per loop: bytes are copied out of it into the connection's own buffer,
    /// so an idle connection holds no read buffer at all.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    /// One response buffer per loop: the answers of a round are serialized into it one after
    /// another and written at the round's end (`queueAnswer`); only what a socket does not take
    /// is copied into its connection, so no array is allocated per response and an idle
    /// connection holds no output buffer.
    @exclusivity(unchecked) var output: [UInt8] = []
    /// The connections whose answers wait in `output`, each with where its bytes end, in order.
    /// Each holds one reference, taken by `queueAnswer` and given back by `writeAnswers`: an
    /// array of strong references retained each one again when read out, and released both.
    @exclusivity(unchecked) private var unsent: [(connection: Unmanaged<HTTPConnection>, end: Int)] = []
    @exclusivity(unchecked) var dateCache = DateCache()
    /// The connections registered on this loop; change it through `add` and `remove`, which
    /// keep `connectionCount` with it.
    @exclusivity(unchecked) private(set) var connections: [ObjectIdentifier: HTTPConnection] = [:]
    @exclusivity(unchecked) var draining = false
    /// This loop's place among the server's loops, and all of them (weakly: they hold each
    /// other), for moving a connection to another (``ConnectionPlacement``). Set before the loops start.
    let index: Int
    private(set) var siblings: [WeakLoopContext] = []
    /// `connections.count`, readable from other loops: what keeps moves balanced.
    let connectionCount = Atomic<Int>(0)
    /// `writeAnswers`, made once rather than a closure per round.
    private lazy var writeAnswersAtEnd: () -> Void = { [unowned self] in writeAnswers() }

    init(loop: EventLoop, server: ServerShared, index: Int) {
        self.loop = loop
        self.server = server
        self.index = index
    }

    /// Tells each context of one server about the others. Before the loops start.
    static func introduce(_ contexts: [LoopContext]) {
        for context in contexts { context.siblings = contexts.map { WeakLoopContext(context: $0) } }
    }

    deinit { scratch.deallocate() }

    func add(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = connection
        connectionCount.add(1, ordering: .relaxed)
    }

    func remove(_ connection: HTTPConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        connectionCount.subtract(1, ordering: .relaxed)
    }

    /// Serializes `response` for `connection`, to be written when the loop's round ends, with the
    /// other answers of the round: as Redis writes its replies before the loop sleeps. A client
    /// that keeps many connections (a load balancer, a load generator) then reads a round's
    /// answers in one wake-up rather than one wake-up each: with wrk on the same two cores, its
    /// CPU an uncached GET fell from 11.5–12.8 to 8.2–9.5 µs, and the GETs a second rose 15–16 %
    /// (bench/README.md). An answer waits at most for the rest of its round.
    ///
    /// Connections run only inside their loop's rounds (events, tasks, timers and what
    /// `LoopIteration` runs at a round's end, all within `EventLoop.run`), so there is always a
    /// round to queue in.
    func queueAnswer(_ response: HTTPResponse, framing: HTTPResponseFraming, for connection: HTTPConnection) {
        if unsent.isEmpty {
            let queued = LoopIteration.atEnd(writeAnswersAtEnd)
            precondition(queued, "an answer made off its event loop's rounds")
        }
        response.serialize(framing: framing, date: dateCache.current(), into: &output)
        unsent.append((Unmanaged.passRetained(connection), output.count))
    }

    /// Writes the round's answers in the order they were made. A connection answered here may
    /// answer its next pipelined request at once; that answer is appended and written too.
    private func writeAnswers() {
        var start = 0
        var index = 0
        while index < unsent.count {
            let (queued, end) = unsent[index]
            index += 1
            queued.takeRetainedValue().writeQueuedAnswer(start..<end)
            start = end
        }
        unsent.removeAll(keepingCapacity: true)
        recycleOutput()
    }

    /// Empties the output buffer for the next response, giving back an unusually large one.
    func recycleOutput() {
        if output.capacity > 64 * 1024 { output = [] } else { output.removeAll(keepingCapacity: true) }
    }
}

struct WeakLoopContext {
    weak var context: LoopContext?
}

/// The I/O shell around `ConnectionStateMachine`: reads, writes, timers, and calling the
/// responder. Lives on one loop; `@unchecked Sendable` only so completions can carry it back
/// to that loop through `execute`.
///
/// Its state is touched on the loop's thread only, one call at a time, and never through an
/// overlapping access, so its stored properties opt out of the run-time exclusivity checks
/// (`@exclusivity(unchecked)`): those cost ~1.3k instructions a request, 5 % of a `/healthz`
/// (callgrind), each a TLS lookup and an access-set insert.
package final class HTTPConnection: IOHandler, @unchecked Sendable {
    private let fd: Int32
    private let context: LoopContext
    /// The server's responder, kept here: called through `context.server`, every request
    /// retained and released it around the call.
    private let responder: any Responder
    @exclusivity(unchecked) private var machine: ConnectionStateMachine
    @exclusivity(unchecked) private var outgoing: [UInt8] = []
    @exclusivity(unchecked) private var outgoingOffset = 0
    @exclusivity(unchecked) private var interest: Interest = .read
    @exclusivity(unchecked) private var timer: TimerID?
    @exclusivity(unchecked) private var armedDeadline: UInt64?
    @exclusivity(unchecked) private(set) var closed = false
    @exclusivity(unchecked) private var lingering = false
    /// Counts delivered requests, so a late or duplicate completion cannot answer a later one.
    @exclusivity(unchecked) private var serial: UInt64 = 0
    @exclusivity(unchecked) private var dispatching = false
    @exclusivity(unchecked) private var synchronousResponse: HTTPResponse?
    /// Reads so far, for asking every `readsBetweenChecks` whether to move (``ConnectionPlacement``).
    @exclusivity(unchecked) private var reads: UInt64 = 0

    private static let lingerNanoseconds: UInt64 = 1_000_000_000

    init(fd: Int32, context: LoopContext) {
        self.fd = fd
        self.context = context
        responder = context.server.responder
        machine = ConnectionStateMachine(limits: context.server.limits, now: monotonicNanoseconds())
        context.server.connectionObjectCreated()
    }

    deinit { context.server.connectionObjectFreed() }

    /// Registers with the loop. Must run on the loop.
    func start() {
        try? Socket.setNoDelay(fd)
        do {
            try context.loop.register(fd: fd, interest: .read, handler: self)
        } catch {
            Socket.close(fd)
            closed = true
            context.server.connectionClosed()
            return
        }
        context.add(self)
        if context.draining {
            run(machine.beginDrain())
        } else {
            syncTimer()
        }
    }

    // MARK: - IOHandler

    package func readable() {
        guard !closed else { return }
        if let target = loopToMoveTo() {
            move(to: target)
            return
        }
        if lingering {
            drainLinger()
            return
        }
        guard machine.wantsRead else {
            if interest.contains(.read) {
                // Bytes (or the peer's half-close) came while a request is in flight: they wait
                // in the socket until it is answered. Epoll is level-triggered and would report
                // them on every wait, so read interest is disarmed now, once (see `run`).
                setInterest(interest.subtracting(.read))
                return
            }
            // Only hang-ups arrive without read interest: the peer is gone, nobody to answer.
            finalClose()
            return
        }
        // A few reads per wake-up, then let other connections run.
        for _ in 0..<4 {
            let result: IOResult<Int>
            do {
                result = try Socket.read(fd, into: context.scratch)
            } catch {
                finalClose()
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .processed(0):
                run(machine.endOfInput(now: context.loop.iterationNanoseconds))
                if !closed && machine.wantsRead == false { setInterest(interest.subtracting(.read)) }
                return
            case .processed(let count):
                run(
                    machine.bytesRead(
                        UnsafeRawBufferPointer(rebasing: context.scratch[0..<count]),
                        now: context.loop.iterationNanoseconds))
                if closed || !machine.wantsRead || lingering { return }
                // A short read drained the socket: another read would almost always be an EAGAIN
                // syscall per request. Epoll is level-triggered, so later bytes still wake us.
                if count < context.scratch.count { return }
            }
        }
    }

    package func writable() {
        guard !closed else { return }
        if flush() { run(machine.writeCompleted(now: context.loop.iterationNanoseconds)) }
    }

    // MARK: - Driving the machine

    /// Performs actions until the machine has nothing more to do now. Iterative, so a burst of
    /// pipelined requests answered synchronously does not grow the stack.
    private func run(_ first: ConnectionStateMachine.Action) {
        var action = first
        loop: while !closed {
            switch consume action {
            case .none:
                break loop
            case .sendContinue:
                // Not a response: the machine stays reading the body, nothing to complete.
                guard continueResponseBytes.withUnsafeBytes({ write($0) }) else { break loop }
                action = .none
            case .deliver(let request):
                guard let response = dispatch(request) else { break loop }
                action = answer(response)
            case .renderError(let error, let head):
                action = answer(responder.respond(toProtocolError: error, requestHead: head))
            case .close(let graceful):
                if graceful { beginLinger() } else { finalClose() }
                break loop
            }
        }
        guard !closed, !lingering else { return }
        var wanted = Interest()
        // Read interest stays armed while a request is in flight: clients almost never send
        // more before their answer, and disarming it for every request answered on another
        // thread, then arming it again, were two `epoll_ctl` calls per write (`perf stat`).
        // `readable` disarms it if bytes do come meanwhile.
        if machine.wantsRead || interest.contains(.read) { wanted.insert(.read) }
        if outgoingOffset < outgoing.count { wanted.insert(.write) }
        setInterest(wanted)
        syncTimer()
    }

    /// Calls the responder. Returns the response if it completed synchronously on this thread.
    private func dispatch(_ request: HTTPRequest) -> HTTPResponse? {
        serial &+= 1
        dispatching = true
        synchronousResponse = nil
        responder.respond(to: request, completion: .connection(self, serial: serial))
        dispatching = false
        // Moved out, not copied: a copy retained the response's headers and body, and clearing
        // the property released them again.
        return synchronousResponse.take()
    }

    /// The responder's answer to request `expected`, on any thread (`ResponseCompletion`).
    func complete(_ response: consuming HTTPResponse, serial expected: UInt64) {
        if context.loop.inEventLoop {
            if dispatching && serial == expected {
                synchronousResponse = response
            } else {
                completed(response, serial: expected)
            }
        } else {
            let response = response  // a consuming parameter cannot be captured; its copy can
            context.loop.execute { self.completed(response, serial: expected) }
        }
    }

    /// An asynchronous completion, back on the loop. The connection may have closed meanwhile.
    private func completed(_ response: HTTPResponse, serial: UInt64) {
        guard !closed, !lingering, serial == self.serial else { return }
        run(answer(response))
    }

    /// Answers the request in flight: queued in the loop's output buffer for the end of the
    /// round (`LoopContext.queueAnswer`), when the machine goes on at `writeQueuedAnswer`; or,
    /// behind bytes the socket has not taken yet, appended to them and written now, when the
    /// machine's next action is returned once all of it is out. `.none` while the answer waits,
    /// while the socket is full (the rest waits in `outgoing`) or after the connection failed.
    private func answer(_ response: HTTPResponse) -> ConnectionStateMachine.Action {
        // The loop's time for both: a synchronous write takes microseconds, deadlines are seconds.
        let now = context.loop.iterationNanoseconds
        guard let framing = machine.responseReady(response, now: now) else { return .none }
        guard outgoingOffset < outgoing.count else {
            context.queueAnswer(response, framing: framing, for: self)
            return .none
        }
        response.serialize(framing: framing, date: context.dateCache.current(), into: &outgoing)
        return flush() ? machine.writeCompleted(now: now) : .none
    }

    /// This connection's answer, `context.output[range]`, at the end of the loop's round.
    func writeQueuedAnswer(_ range: Range<Int>) {
        guard !closed, !lingering else { return }
        // Lent, not sliced: a slice of the loop's buffer retained and released it.
        let allOut = context.output.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[range])) }
        if allOut {
            run(machine.writeCompleted(now: context.loop.iterationNanoseconds))
        }
    }

    /// Writes `bytes` now, behind anything still queued. What the socket does not take is
    /// copied into `outgoing` and write interest is armed. True when everything is out.
    private func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if outgoingOffset < outgoing.count {
            outgoing.append(contentsOf: bytes)
            return flush()
        }
        var written = 0
        switch send(bytes, from: &written) {
        case true?:
            return true
        case false?:
            outgoing = Array(bytes[written...])
            outgoingOffset = 0
            setInterest(interest.union(.write))
            return false
        case nil:
            return false
        }
    }

    /// Writes queued bytes. True when everything is out; false if the socket is full (write
    /// interest is armed) or the connection failed and closed.
    private func flush() -> Bool {
        switch outgoing.withUnsafeBytes({ send($0, from: &outgoingOffset) }) {
        case true?:
            break
        case false?:
            setInterest(interest.union(.write))
            return false
        case nil:
            return false
        }
        // Drop the buffer: the next response goes through the loop's output buffer, and an idle
        // connection should hold nothing.
        outgoing = []
        outgoingOffset = 0
        if interest.contains(.write) { setInterest(interest.subtracting(.write)) }
        return true
    }

    /// Writes `bytes[offset...]` until all is out (true) or the socket is full (false),
    /// advancing `offset`; nil when the connection failed and was closed.
    private func send(_ bytes: UnsafeRawBufferPointer, from offset: inout Int) -> Bool? {
        while offset < bytes.count {
            let result: IOResult<Int>
            do {
                result = try Socket.write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            } catch {
                finalClose()
                return nil
            }
            switch result {
            case .processed(let count): offset += count
            case .wouldBlock: return false
            }
        }
        return true
    }

    /// Server shutdown reached this connection.
    func beginDrain() {
        guard !closed, !lingering else { return }
        run(machine.beginDrain())
    }

    // MARK: - Timers

    /// Keeps at most one timer armed, at or before the machine's deadline. A later deadline does
    /// not re-arm: the early timer fires, sees the deadline moved, and arms again.
    ///
    /// A timer holds the connection strongly until it fires or `finalClose` cancels it. A weak
    /// capture gave every connection a side table, and each retain of it (one per event the
    /// loop dispatches) then took the runtime's slow path.
    private func syncTimer() {
        guard let deadline = machine.deadline else { return }
        if let armed = armedDeadline, armed <= deadline { return }
        if let timer { context.loop.cancelTimer(timer) }
        armedDeadline = deadline
        timer = context.loop.scheduleTimer(at: deadline) { [self] in timerFired() }
    }

    private func timerFired() {
        timer = nil
        armedDeadline = nil
        guard !closed else { return }
        if lingering {
            finalClose()
            return
        }
        run(machine.timerFired(now: monotonicNanoseconds()))
        if !closed && !lingering { syncTimer() }
    }

    // MARK: - Closing

    /// RFC 9112 §9.6: half-close, then read and discard until the peer closes (or a short
    /// timeout), so unread request bytes do not turn our close into an RST that destroys the response.
    private func beginLinger() {
        lingering = true
        Socket.shutdownWrite(fd)
        context.server.connectionFinished()
        setInterest(.read)
        if let timer { context.loop.cancelTimer(timer) }
        armedDeadline = nil
        timer = context.loop.scheduleTimer(at: monotonicNanoseconds() &+ Self.lingerNanoseconds) { [self] in
            timerFired()
        }
    }

    private func drainLinger() {
        while true {
            switch try? Socket.read(fd, into: context.scratch) {
            case .processed(let count) where count > 0:
                continue
            case .wouldBlock:
                return
            default:
                finalClose()
                return
            }
        }
    }

    /// Unregisters and closes the fd now. Idempotent.
    func finalClose() {
        guard !closed else { return }
        leaveLoop()
        Socket.close(fd)
        if !lingering { context.server.connectionFinished() }
        context.server.connectionClosed()
    }

    /// Done with this loop: no timer, no registration, out of its connections. The fd stays
    /// open (`finalClose` closes it, `move` hands it on).
    private func leaveLoop() {
        closed = true
        if let timer { context.loop.cancelTimer(timer) }
        timer = nil
        context.loop.unregister(fd: fd)
        context.remove(self)
    }

    // MARK: - Moving to another loop

    /// The loop this connection should move to now, if any: only between requests, with
    /// nothing buffered either way, and only when the move keeps the loops balanced.
    private func loopToMoveTo() -> LoopContext? {
        reads &+= 1
        guard reads % ConnectionPlacement.readsBetweenChecks == 1, !context.draining, machine.isIdle,
            outgoingOffset >= outgoing.count, !dispatching, synchronousResponse == nil, !lingering
        else { return nil }
        let siblings = context.siblings
        guard let wanted = context.server.placement.preferredLoop(of: fd, loopCount: siblings.count),
            wanted != context.index, let target = siblings[wanted].context
        else { return nil }
        let counts = siblings.map { $0.context?.connectionCount.load(ordering: .relaxed) ?? 0 }
        return LoopBalance.allowsMove(from: context.index, to: wanted, counts: counts) ? target : nil
    }

    /// Hands the socket to `target`'s loop: this object is done with it, a new one starts there.
    /// The request waiting in the socket is read on the new loop. The connection stays open
    /// and active throughout, so the server's counts do not change.
    private func move(to target: LoopContext) {
        leaveLoop()
        context.server.moved.add(1, ordering: .relaxed)
        let fd = fd
        target.loop.execute {
            let moved = HTTPConnection(fd: fd, context: target)
            // It was asked at this read already.
            moved.reads = 1
            moved.start()
        }
    }

    private func setInterest(_ wanted: Interest) {
        guard wanted != interest, !closed else { return }
        interest = wanted
        try? context.loop.setInterest(fd: fd, wanted)
    }
}
