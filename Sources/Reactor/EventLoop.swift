import CLinux
import Glibc
import Synchronization
import Threads

/// Something registered on an event loop for readiness of one fd. Called on the loop thread.
package protocol IOHandler: AnyObject {
    /// The fd is readable, hung up or in error: the next read says which.
    func readable()
    /// The fd accepts writes again (only delivered while `.write` interest is set).
    func writable()
}

/// One thread, one epoll instance: fd registrations, timers, and a queue of closures other
/// threads hand in (STYLE example 7).
///
/// Everything except `execute`, `stop`, `join` and `inEventLoop` must be called on the loop
/// thread; this is checked in debug builds.
///
/// ```swift
/// let loop = try EventLoop(name: "loop-0")
/// loop.start()
/// loop.execute { print("on the loop") }
/// ```
package final class EventLoop: @unchecked Sendable {
    private struct Registration {
        var generation: UInt32
        var interest: Interest
        var handler: any IOHandler
    }

    /// The thread name, for debugging.
    package let name: String
    private let epollFD: Int32
    private let wakeFD: Int32
    // Loop-thread state: touched by the loop's thread only, one call at a time, so it skips the
    // run-time exclusivity checks (three an iteration, ~80 instructions each, callgrind).
    @exclusivity(unchecked) private var registrations: [Registration?] = []
    @exclusivity(unchecked) private var nextGeneration: UInt32 = 0
    @exclusivity(unchecked) private var timers = TimerHeap()
    @exclusivity(unchecked) private var running = true
    @exclusivity(unchecked) private var iterationStart: UInt64 = 0
    @exclusivity(unchecked) private var idleYield = IdleYield()
    /// What handlers share within one wake-up (a read transaction) ends before the next wait;
    /// work that other threads finish for this loop's handlers comes back through `tryExecute`.
    private let rounds = LoopIteration()
    // Cross-thread state.
    /// Tasks to run, and whether the loop still takes them (false once `run` has returned).
    private let tasks = PThreadLock<(queue: [@Sendable () -> Void], open: Bool)>(([], true))
    private let wakeupPending = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let kernelThreadIDValue = Atomic<Int32>(0)
    private let finished = Atomic<Bool>(false)
    private var thread: NamedThread?

    /// `monotonicNanoseconds()` as read once, when the loop's current wait for events returned.
    /// For handlers that stamp deadlines seconds away: a clock read of their own per event cost
    /// ~22 ns each, twice a request, for precision no deadline needs. Loop thread only.
    package var iterationNanoseconds: UInt64 {
        assert(inEventLoop)
        return iterationStart
    }

    /// Creates the epoll instance and the wake-up eventfd; call `start()` to run.
    package init(name: String) throws {
        self.name = name
        epollFD = try Epoll.create()
        do {
            wakeFD = try EventFD.create()
        } catch {
            close(epollFD)
            throw error
        }
        // The wake fd uses generation 0, which no registration gets.
        try Epoll.ctl(
            epollFD, EPOLL_CTL_ADD, fd: wakeFD, mask: EPOLLIN.rawValue, data: UInt64(UInt32(bitPattern: wakeFD)))
    }

    deinit {
        close(wakeFD)
        close(epollFD)
    }

    /// The loop thread's kernel id (`/proc/self/task/<id>`), 0 until it runs: how a test finds
    /// this loop's CPU time among the threads of other servers in the same process.
    package var kernelThreadID: Int32 { kernelThreadIDValue.load(ordering: .acquiring) }

    /// True when called on this loop's thread.
    package var inEventLoop: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Starts the loop on a new thread.
    package func start() {
        // The thread holds the loop until `run` returns, as the loop's owner may drop it first.
        thread = NamedThread.start(name: name) { [self] in run() }
    }

    /// Runs `task` on the loop thread, soon. Safe from any thread, including the loop's.
    package func execute(_ task: @escaping @Sendable () -> Void) {
        _ = tryExecute(task)
    }

    /// ``execute(_:)``, saying whether the task was taken: false once the loop has stopped, when
    /// the caller should run it itself.
    package func tryExecute(_ task: @escaping @Sendable () -> Void) -> Bool {
        let taken = tasks.withLock { tasks in
            guard tasks.open else { return false }
            tasks.queue.append(task)
            return true
        }
        guard taken else { return false }
        if !wakeupPending.exchange(true, ordering: .acquiringAndReleasing) {
            try? EventFD.signal(wakeFD)
        }
        return true
    }

    /// Asks the loop to stop after its current iteration and waits for the thread to end,
    /// unless called on the loop itself. Idempotent.
    package func stop() {
        execute { [self] in running = false }
        if !inEventLoop, let thread {
            if !finished.exchange(true, ordering: .acquiringAndReleasing) {
                thread.join()
            }
        }
    }

    // MARK: - Registrations (loop thread)

    /// Registers `fd` for `interest`; the loop keeps `handler` alive until `unregister`.
    package func register(fd: Int32, interest: Interest, handler: any IOHandler) throws {
        assert(inEventLoop)
        nextGeneration &+= 1
        if nextGeneration == 0 { nextGeneration = 1 }
        let index = Int(fd)
        if index >= registrations.count {
            registrations.append(contentsOf: repeatElement(nil, count: index + 1 - registrations.count))
        }
        try Epoll.ctl(
            epollFD, EPOLL_CTL_ADD, fd: fd, mask: interest.epollMask,
            data: Self.userData(fd: fd, generation: nextGeneration))
        registrations[index] = Registration(generation: nextGeneration, interest: interest, handler: handler)
    }

    /// Changes what `fd` waits for; a no-op when unchanged.
    package func setInterest(fd: Int32, _ interest: Interest) throws {
        assert(inEventLoop)
        guard Int(fd) < registrations.count, var registration = registrations[Int(fd)] else { return }
        guard registration.interest != interest else { return }
        try Epoll.ctl(
            epollFD, EPOLL_CTL_MOD, fd: fd, mask: interest.epollMask,
            data: Self.userData(fd: fd, generation: registration.generation))
        registration.interest = interest
        registrations[Int(fd)] = registration
    }

    /// Removes `fd` from epoll and drops the handler. Call before closing the fd.
    package func unregister(fd: Int32) {
        assert(inEventLoop)
        guard Int(fd) < registrations.count, registrations[Int(fd)] != nil else { return }
        registrations[Int(fd)] = nil
        try? Epoll.ctl(epollFD, EPOLL_CTL_DEL, fd: fd, mask: 0, data: 0)
    }

    // MARK: - Timers (loop thread)

    /// Calls `body` on the loop once `monotonicNanoseconds()` reaches `deadline`.
    @discardableResult
    package func scheduleTimer(at deadline: UInt64, _ body: @escaping () -> Void) -> TimerID {
        assert(inEventLoop)
        return timers.schedule(at: deadline, body)
    }

    /// Cancels a timer; harmless if it already fired.
    package func cancelTimer(_ id: TimerID) {
        assert(inEventLoop)
        timers.cancel(id)
    }

    // MARK: - The loop

    // epoll data: fd in the low 32 bits, generation in the high 32, so an event queued for a
    // closed fd whose number was reused does not reach the new owner.
    private static func userData(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        kernelThreadIDValue.store(NamedThread.currentKernelID, ordering: .releasing)
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        iterationStart = monotonicNanoseconds()
        // The hand-back holds the loop until `leave` drops it; a holder that calls it after the
        // loop stopped is told so (`tryExecute` refuses) and runs its task itself.
        rounds.enter(handBack: { [self] task in tryExecute(task) })
        defer { rounds.leave() }
        var count = 0
        while running {
            do {
                count = try waitForEvents(
                    events, capacity: capacity, timeoutMs: nextTimeoutMilliseconds(), afterEvents: count > 0)
            } catch {
                preconditionFailure("epoll_wait: \(error)")
            }
            iterationStart = monotonicNanoseconds()
            for index in 0..<count {
                dispatch(events[index])
            }
            runTasks()
            runTimers()
            rounds.end()
        }
        // Tasks queued before the loop closed its queue still run; later ones are refused.
        tasks.withLock { $0.open = false }
        runTasks()
        // Drop handlers and timers so their cycles through the loop end with it.
        registrations.removeAll()
        timers = TimerHeap()
    }

    /// Waits for events, yielding the core once before sleeping: when nothing is ready, the
    /// loop first lets any other thread runnable on its core run (`sched_yield`), then looks
    /// again, blocking only if there is still nothing. Where the loop shares its cores (with its
    /// clients, the writer thread, other processes), the peer that is about to send it work runs
    /// now, and the loop finds that work without a sleep and a wake-up; a loop that went to sleep
    /// at once left its core idle through the wake-up's latency, while its next requests waited
    /// on a thread that had no core. With wrk on the same two cores, a cached GET's cores were
    /// 8–10 % idle (~2 % after) and its GETs a second rose 6 % (median of 8 paired runs);
    /// `/healthz`'s did not fall (bench/README.md). With nothing else runnable the yield returns
    /// at once: two more system calls and two clock reads each time the loop runs out of work,
    /// none while events keep coming.
    ///
    /// Only a loop that has just handled events yields: one woken by a timer alone has no peer
    /// feeding it. Yields that held the loop back for long pause yielding (`IdleYield`).
    private func waitForEvents(
        _ events: UnsafeMutablePointer<epoll_event>, capacity: Int32, timeoutMs: Int32, afterEvents: Bool
    ) throws -> Int {
        if afterEvents && timeoutMs != 0 {
            let start = monotonicNanoseconds()
            if idleYield.allowed(at: start) {
                let ready = try Epoll.wait(epollFD, events, capacity: capacity, timeoutMs: 0)
                if ready > 0 { return ready }
                sched_yield()
                idleYield.yielded(from: start, to: monotonicNanoseconds())
            }
        }
        return try Epoll.wait(epollFD, events, capacity: capacity, timeoutMs: timeoutMs)
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
        let generation = UInt32(truncatingIfNeeded: data >> 32)
        if generation == 0 {
            // Drain before clearing the flag. The other order loses a wake-up: an `execute` between
            // the two would set the flag and signal, the drain would eat the signal, and a later
            // `execute` would see the flag still set and not signal, while the loop goes back to
            // sleep in epoll_wait with its task queued.
            try? EventFD.drain(wakeFD)
            wakeupPending.store(false, ordering: .releasing)
            return
        }
        let readiness = Readiness(mask: event.events)
        guard let registration = current(fd: fd, generation: generation) else { return }
        if readiness.readable, registration.interest.contains(.read) || readiness.hangup {
            registration.handler.readable()
        }
        // The read handler may have closed the fd (or it may now belong to someone else).
        if readiness.writable, let again = current(fd: fd, generation: generation),
            again.interest.contains(.write)
        {
            again.handler.writable()
        }
    }

    private func current(fd: Int32, generation: UInt32) -> Registration? {
        guard Int(fd) < registrations.count, let registration = registrations[Int(fd)],
            registration.generation == generation
        else { return nil }
        return registration
    }

    private func runTasks() {
        let pending = tasks.withLock { tasks -> [@Sendable () -> Void] in
            let taken = tasks.queue
            tasks.queue.removeAll()
            return taken
        }
        for task in pending { task() }
    }

    private func runTimers() {
        guard !timers.isEmpty else { return }
        // A fresh read, not `iterationStart`: the iteration may have run long, and a timer due
        // meanwhile should fire now, not one wait later.
        for body in timers.popDue(now: monotonicNanoseconds()) { body() }
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        if tasks.withLock({ !$0.queue.isEmpty }) { return 0 }
        guard let deadline = timers.nextDeadline() else { return -1 }
        let now = monotonicNanoseconds()
        if deadline <= now { return 0 }
        // Round up so we never wake just before the deadline and spin.
        let ms = (deadline - now + 999_999) / 1_000_000
        return Int32(min(ms, 60_000))
    }
}
