import Glibc

/// State guarded by a pthread mutex, plus a condition variable to wait for it to change: the
/// pool's borrowers sleep until a connection comes back, the store's writer threads until work
/// arrives. (`Synchronization.Mutex` has no condition variable.) Timed waits use
/// `CLOCK_MONOTONIC`, immune to wall-clock jumps.
///
/// `@unchecked Sendable`: every access to `state` happens with `mutex` held.
package final class ConditionLock<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = .allocate(capacity: 1)
    private let condition: UnsafeMutablePointer<pthread_cond_t> = .allocate(capacity: 1)
    private var state: State

    /// Guards `state`.
    package init(_ state: State) {
        self.state = state
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Waits until `predicate` holds, then runs `body` with the lock held.
    package func withLock<Result>(
        waitingUntil predicate: (State) -> Bool, _ body: (inout State) throws -> Result
    ) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !predicate(state) { pthread_cond_wait(condition, mutex) }
        return try body(&state)
    }

    /// Waits until `predicate` holds or `timeout` passes, then runs `body` with the lock held
    /// (whichever happened: `body` looks at the state again).
    package func withLock<Result>(
        waitingUntil predicate: (State) -> Bool, timeout: Duration, _ body: (inout State) throws -> Result
    ) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while !predicate(state) {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        return try body(&state)
    }

    /// Wakes every waiter.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}

/// Moves a non-`Sendable` value between threads where a lock guarantees one user at a time
/// (the pool hands a connection to one borrower and takes it back).
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
}
