import Glibc

/// State guarded by a pthread mutex.
///
/// `Synchronization.Mutex` on Linux is a bare futex that ThreadSanitizer cannot see, so every
/// hand-off between threads was reported as a race; glibc's pthread mutex costs the same
/// uncontended and TSan understands it, which keeps `scripts/reliability/sanitizers.sh` able to
/// report real races.
///
/// ```swift
/// let tasks = PThreadLock<[@Sendable () -> Void]>([])
/// tasks.withLock { $0.append(task) }
/// ```
///
/// `@unchecked Sendable`: every access to `state` happens with `mutex` held.
package final class PThreadLock<State>: @unchecked Sendable {
    // `@usableFromInline` so `withLock` inlines into other modules: the event loop's task queue
    // takes this lock for every hand-off, and an unspecialized generic call would cost more than
    // the lock itself.
    @usableFromInline let mutex: PThreadMutex
    /// Touched only with `mutex` held, so never by two accesses at once: no run-time
    /// exclusivity check (one per hand-off, ~80 instructions, callgrind).
    @exclusivity(unchecked) @usableFromInline var state: State

    /// Guards `state`.
    package init(_ state: State) {
        self.state = state
        mutex = PThreadMutex(at: .allocate(capacity: 1))
    }

    deinit {
        mutex.destroy()
        mutex.pointer.deallocate()
    }

    /// Runs `body` with the lock held.
    @inlinable
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&state)
    }
}

/// A pthread mutex in memory its owner allocated (a `pthread_mutex_t` must not move once
/// initialised, so it never lives in a Swift stored property); the one place the module calls
/// `pthread_mutex_*`.
@usableFromInline
struct PThreadMutex {
    @usableFromInline let pointer: UnsafeMutablePointer<pthread_mutex_t>

    /// Initialises the mutex at `pointer` (default attributes: not recursive).
    init(at pointer: UnsafeMutablePointer<pthread_mutex_t>) {
        self.pointer = pointer
        let result = pthread_mutex_init(pointer, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    @inlinable
    func lock() {
        // Fails only for a mutex that was never initialised or is already ours (EDEADLK with
        // error checking): our bugs, not conditions to recover from.
        let result = pthread_mutex_lock(pointer)
        assert(result == 0, "pthread_mutex_lock failed: \(result)")
    }

    @inlinable
    func unlock() {
        let result = pthread_mutex_unlock(pointer)
        assert(result == 0, "pthread_mutex_unlock failed: \(result)")
    }

    /// Destroys the mutex; the owner deallocates the memory.
    func destroy() {
        pthread_mutex_destroy(pointer)
    }
}
