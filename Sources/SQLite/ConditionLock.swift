import Glibc

/// State guarded by a pthread mutex, plus a condition variable to wait for it to change.
///
/// `Synchronization.Mutex` cannot be paired with a condition variable (it does not expose its
/// underlying mutex), and the writer thread and the reader pool must sleep until work or a
/// connection arrives; hence this small wrapper. The condition uses `CLOCK_MONOTONIC` so timed
/// waits ignore wall-clock jumps.
///
/// `@unchecked Sendable`: every access to `state` happens with `mutex` held.
final class ConditionLock<State: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = .allocate(capacity: 1)
    private let condition: UnsafeMutablePointer<pthread_cond_t> = .allocate(capacity: 1)
    private var state: State

    init(_ state: State) {
        self.state = state
        let mutexResult = pthread_mutex_init(mutex, nil)
        precondition(mutexResult == 0, "pthread_mutex_init failed: \(mutexResult)")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        let conditionResult = pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(conditionResult == 0, "pthread_cond_init failed: \(conditionResult)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Waits until `predicate` holds (or `timeout` passes), then runs `body` with the lock held.
    /// - Parameters:
    ///   - predicate: Checked with the lock held, after each wake-up (wake-ups may be spurious).
    ///   - timeout: Longest wait; `nil` waits forever.
    ///   - body: Runs with the lock held whether the predicate holds or the wait timed out.
    func withLock<Result>(
        waitingUntil predicate: (State) -> Bool, timeout: Duration? = nil, _ body: (inout State) throws -> Result
    ) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let timeout {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let (seconds, attoseconds) = max(timeout, .zero).components
            var nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
            deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
            nanoseconds %= 1_000_000_000
            deadline.tv_nsec = nanoseconds
            while !predicate(state) {
                if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
            }
        } else {
            while !predicate(state) {
                pthread_cond_wait(condition, mutex)
            }
        }
        return try body(&state)
    }

    /// Wakes every waiter (the writer thread and any `close()`/`write()` callers share one condition).
    func broadcast() {
        pthread_cond_broadcast(condition)
    }
}

/// Moves a non-`Sendable` value to another thread that becomes its only user.
///
/// `@unchecked Sendable` is sound only when the sender stops using the value after handing it
/// over (or, in the reader pool, when a lock guarantees one borrower at a time); each use site
/// says which.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
}
