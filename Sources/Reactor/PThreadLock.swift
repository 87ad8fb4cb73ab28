import Glibc

/// State guarded by a pthread mutex.
///
/// The event loop's task queue is the one structure every thread touches. `Synchronization.Mutex`
/// on Linux is a bare futex that ThreadSanitizer cannot see, so every hand-off to the loop was
/// reported as a race; glibc's pthread mutex costs the same uncontended and TSan understands it,
/// which keeps `scripts/reliability/sanitizers.sh` able to report real races.
///
/// `@unchecked Sendable`: every access to `state` happens with `mutex` held.
package final class PThreadLock<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = .allocate(capacity: 1)
    private var state: State

    package init(_ state: State) {
        self.state = state
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
