import Glibc
import HTTP1
import Reactor
import Synchronization
import Threads

/// What every loop of one server shares: the responder, the limits, the counters.
final class ServerShared: Sendable {
    let responder: any Responder
    let limits: ConnectionStateMachine.Limits
    /// Connections accepted and not yet closed (lingering ones included).
    let open = Atomic<Int>(0)
    /// Connections still able to carry a request (not lingering): what shutdown waits for.
    let active = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    /// Connection objects alive, closed ones not yet freed included: a timer or task that
    /// outlives its connection's close shows here (see ``HTTPServer/Metrics/connectionObjects``).
    let connectionObjects = Atomic<Int>(0)
    /// Connections handed to another loop (``HTTPServer/Metrics/connectionsMoved``).
    let moved = Atomic<Int>(0)
    /// Which loop a connection should live on, asked between its requests.
    let placement: ConnectionPlacement

    init(responder: any Responder, limits: ConnectionStateMachine.Limits, placement: ConnectionPlacement) {
        self.responder = responder
        self.limits = limits
        self.placement = placement
    }

    func connectionFinished() { active.subtract(1, ordering: .relaxed) }
    func connectionObjectCreated() { connectionObjects.add(1, ordering: .relaxed) }
    func connectionObjectFreed() { connectionObjects.subtract(1, ordering: .relaxed) }
    func connectionClosed() { open.subtract(1, ordering: .relaxed) }
}

/// An HTTP/1.1 server over `Reactor` event loops that hands whole requests to a `Responder`.
///
/// ```swift
/// var configuration = HTTPServer.Configuration()
/// configuration.port = 0
/// let server = HTTPServer(configuration: configuration, responder: app)
/// let port = try server.start()
/// // …
/// server.shutdown(drainTimeout: .seconds(10))
/// ```
package final class HTTPServer: Sendable {
    /// A point-in-time view of the server's counters.
    package struct Metrics: Sendable, Hashable {
        /// Connections currently open.
        package var openConnections: Int
        /// Connections accepted since start (refused ones included).
        package var totalAccepted: Int
        /// Connection objects not yet freed. Once every connection closed it returns to zero: the
        /// loop's timers hold a connection only until it closes.
        package var connectionObjects: Int
        /// Connections moved to another loop since start (``ConnectionPlacement``).
        package var connectionsMoved: Int
    }

    private struct Running {
        var loops: [EventLoop]
        var contexts: [LoopContext]
        var listener: ListenerHandler
    }

    /// The configuration the server was created with.
    package let configuration: Configuration
    private let shared: ServerShared
    private let running = PThreadLock<Running?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// The kernel ids of the event-loop threads (0 for one not yet running); empty when stopped.
    package var loopKernelThreadIDs: [Int32] {
        running.withLock { $0?.loops.map(\.kernelThreadID) ?? [] }
    }

    /// Creates a server; nothing is bound until `start()`.
    package init(configuration: Configuration, responder: any Responder) {
        self.configuration = configuration
        shared = ServerShared(
            responder: responder, limits: ConnectionStateMachine.Limits(configuration),
            placement: configuration.connectionPlacement)
    }

    /// The current counters.
    package var metrics: Metrics {
        Metrics(
            openConnections: shared.open.load(ordering: .relaxed),
            totalAccepted: shared.accepted.load(ordering: .relaxed),
            connectionObjects: shared.connectionObjects.load(ordering: .relaxed),
            connectionsMoved: shared.moved.load(ordering: .relaxed))
    }

    /// Binds, starts the event loop threads and begins accepting.
    /// - Returns: the bound port (the kernel's choice when the configured port is 0).
    package func start() throws -> Int {
        try running.withLock { running in
            precondition(running == nil && !stopped.load(ordering: .relaxed), "HTTPServer.start() called twice")
            let listener = try ListeningSocket(host: configuration.host, port: configuration.port)
            var loops: [EventLoop] = []
            for index in 0..<max(1, configuration.eventLoopCount) {
                loops.append(try EventLoop(name: "http-\(index)"))
            }
            let contexts = loops.indices.map { LoopContext(loop: loops[$0], server: shared, index: $0) }
            LoopContext.introduce(contexts)
            let handler = ListenerHandler(
                listener: listener, contexts: contexts, shared: shared,
                maxConnections: configuration.maxConnections)
            for loop in loops { loop.start() }
            let first = loops[0]
            let registered = PThreadLock<(any Error)??>(nil)
            first.execute {
                do {
                    try handler.register()
                    registered.withLock { $0 = .some(nil) }
                } catch {
                    registered.withLock { $0 = .some(error) }
                }
            }
            while true {
                let outcome = registered.withLock { $0 }
                if let outcome {
                    if let error = outcome {
                        for loop in loops { loop.stop() }
                        throw error
                    }
                    break
                }
                usleep(1000)
            }
            running = Running(loops: loops, contexts: contexts, listener: handler)
            return listener.port
        }
    }

    /// Stops accepting, lets requests in flight finish and be written, closes idle keep-alive
    /// connections, then stops the loops. Blocks until done or `drainTimeout` passed, after
    /// which remaining connections are closed. Safe from any thread except the server's loops.
    package func shutdown(drainTimeout: Duration) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard let state = running.withLock({ $0 }) else { return }
        precondition(!state.loops.contains { $0.inEventLoop }, "shutdown must not run on one of the server's loops")
        let deadline = monotonicNanoseconds() &+ drainTimeout.nanoseconds
        let listener = state.listener
        state.loops[0].execute { listener.close() }
        for context in state.contexts {
            context.loop.execute {
                context.draining = true
                for connection in Array(context.connections.values) { connection.beginDrain() }
            }
        }
        while shared.active.load(ordering: .acquiring) > 0 && monotonicNanoseconds() < deadline {
            usleep(2000)
        }
        for context in state.contexts {
            context.loop.execute {
                for connection in Array(context.connections.values) { connection.finalClose() }
            }
            context.loop.stop()
        }
        running.withLock { $0 = nil }
    }
}

/// Accepts on loop 0 and hands connections to the loops round-robin (``ConnectionPlacement``
/// may move them later).
final class ListenerHandler: IOHandler, @unchecked Sendable {
    private let listener: ListeningSocket
    private let contexts: [LoopContext]
    private let shared: ServerShared
    private let maxConnections: Int
    private var next = 0
    private var dateCache = DateCache()
    private var closed = false

    init(listener: ListeningSocket, contexts: [LoopContext], shared: ServerShared, maxConnections: Int) {
        self.listener = listener
        self.contexts = contexts
        self.shared = shared
        self.maxConnections = maxConnections
    }

    private var loop: EventLoop { contexts[0].loop }

    func register() throws {
        try loop.register(fd: listener.fd, interest: .read, handler: self)
    }

    func close() {
        guard !closed else { return }
        closed = true
        loop.unregister(fd: listener.fd)
        listener.close()
    }

    func writable() {}

    func readable() {
        // Bounded so one flood of connects cannot starve the connections on this loop.
        for _ in 0..<64 where !closed {
            let accepted: ListeningSocket.Accepted
            do {
                accepted = try listener.accept()
            } catch {
                pauseAccepting()
                return
            }
            switch accepted {
            case .none:
                return
            case .shedForFDExhaustion:
                shared.accepted.add(1, ordering: .relaxed)
            case .fdExhausted:
                pauseAccepting()
                return
            case .connection(let fd):
                shared.accepted.add(1, ordering: .relaxed)
                if shared.open.load(ordering: .relaxed) >= maxConnections {
                    refuse(fd)
                    continue
                }
                shared.open.add(1, ordering: .relaxed)
                shared.active.add(1, ordering: .relaxed)
                let context = contexts[next % contexts.count]
                next &+= 1
                if context.loop === loop {
                    HTTPConnection(fd: fd, context: context).start()
                } else {
                    context.loop.execute { HTTPConnection(fd: fd, context: context).start() }
                }
            }
        }
    }

    /// Over the limit: a best-effort 503 into the fresh socket's empty send buffer, then close.
    private func refuse(_ fd: Int32) {
        let response = shared.responder.respond(toProtocolError: .tooManyConnections, requestHead: nil)
        var refusal: [UInt8] = []
        response.serialize(framing: .refusal, date: dateCache.current(), into: &refusal)
        _ = refusal.withUnsafeBytes { try? Socket.write(fd, $0) }
        Socket.shutdownWrite(fd)
        Socket.close(fd)
    }

    /// Accepting keeps failing (no fds, no reserve): stop listening for 100 ms instead of
    /// spinning on a level-triggered listener that stays readable.
    private func pauseAccepting() {
        guard !closed else { return }
        try? loop.setInterest(fd: listener.fd, [])
        loop.scheduleTimer(at: monotonicNanoseconds() &+ 100_000_000) { [weak self] in
            guard let self, !self.closed else { return }
            try? self.loop.setInterest(fd: self.listener.fd, .read)
        }
    }
}
