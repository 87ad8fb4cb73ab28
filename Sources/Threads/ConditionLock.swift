import Glibc

/// State guarded by a pthread mutex, plus a condition variable to wait for it to change.
///
/// `Synchronization.Mutex` cannot be paired with a condition variable (it does not expose its
/// underlying mutex), and the SQLite writer, the reader pool and the PostgreSQL pool must sleep
/// until work or a connection arrives; hence this lock. The condition uses `CLOCK_MONOTONIC`, so
/// timed waits ignore wall-clock jumps.
///
/// ```swift
/// let queue = ConditionLock<[Job]>([])
/// queue.withLock { $0.append(job) }
/// queue.broadcast()
/// let next = queue.withLock(waitingUntil: { !$0.isEmpty }) { $0.removeFirst() }
/// ```
///
/// `@unchecked Sendable`: every access to `state` happens with the mutex held.
package final class ConditionLock<State>: @unchecked Sendable {
    // The mutex and the condition share one allocation: a `write` to SQLite creates one of
    // these per call to wait for its outcome, so it costs the object plus one block.
    @usableFromInline let mutex: PThreadMutex
    @usableFromInline let condition: UnsafeMutablePointer<pthread_cond_t>
    @usableFromInline var state: State

    /// Guards `state`.
    package init(_ state: State) {
        self.state = state
        let conditionOffset = Self.conditionOffset
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: conditionOffset + MemoryLayout<pthread_cond_t>.size,
            alignment: max(MemoryLayout<pthread_mutex_t>.alignment, MemoryLayout<pthread_cond_t>.alignment))
        mutex = PThreadMutex(at: block.bindMemory(to: pthread_mutex_t.self, capacity: 1))
        condition = (block + conditionOffset).bindMemory(to: pthread_cond_t.self, capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        let result = pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(result == 0, "pthread_cond_init failed: \(result)")
    }

    deinit {
        pthread_cond_destroy(condition)
        mutex.destroy()
        UnsafeMutableRawPointer(mutex.pointer).deallocate()
    }

    /// Where the condition sits in the block, after the mutex.
    private static var conditionOffset: Int {
        let alignment = MemoryLayout<pthread_cond_t>.alignment
        return (MemoryLayout<pthread_mutex_t>.size + alignment - 1) / alignment * alignment
    }

    /// Runs `body` with the lock held.
    @inlinable
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&state)
    }

    /// Waits until `predicate` holds (or `timeout` passes), then runs `body` with the lock held.
    /// - Parameters:
    ///   - predicate: Checked with the lock held, after each wake-up (wake-ups may be spurious).
    ///   - timeout: Longest wait; `nil` waits forever.
    ///   - body: Runs with the lock held whether the predicate holds or the wait timed out, so it
    ///     looks at the state again.
    package func withLock<Result>(
        waitingUntil predicate: (State) -> Bool, timeout: Duration? = nil, _ body: (inout State) throws -> Result
    ) rethrows -> Result {
        mutex.lock()
        defer { mutex.unlock() }
        if let timeout {
            var deadline = Self.monotonicDeadline(after: timeout)
            while !predicate(state) {
                if pthread_cond_timedwait(condition, mutex.pointer, &deadline) == ETIMEDOUT { break }
            }
        } else {
            while !predicate(state) {
                pthread_cond_wait(condition, mutex.pointer)
            }
        }
        return try body(&state)
    }

    /// Wakes every waiter (callers share one condition for several predicates, so a signal to one
    /// could wake the wrong one).
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Wakes one waiter: only for callers whose waiters all wait for the same thing, so any one
    /// of them can take what changed (a queue's workers).
    package func signal() {
        pthread_cond_signal(condition)
    }

    /// `CLOCK_MONOTONIC` now plus `timeout` (negative counts as zero), as `pthread_cond_timedwait`
    /// takes it.
    private static func monotonicDeadline(after timeout: Duration) -> timespec {
        let total = monotonicNanoseconds() &+ max(timeout, .zero).nanoseconds
        return timespec(tv_sec: Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
    }
}
