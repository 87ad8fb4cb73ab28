import Glibc

/// Work a thread defers to the end of what it is doing now, when the thread runs in rounds: an
/// event loop, whose round is one wake-up (the events `epoll_wait` returned, then its tasks and
/// timers).
///
/// It lets a lower layer share a costly set-up among everything one round does without knowing
/// the loop: the SQLite readers keep one read transaction open for the GETs a loop serves in one
/// wake-up (`DatabaseReaderPool`), and end it here before the loop sleeps. On a thread that
/// runs no rounds, ``atEnd(_:)`` refuses and the caller does the work at once, as it would without.
///
/// ```swift
/// LoopIteration.begin()              // the loop's thread, once
/// while running {
///     wait(); handleEvents()         // a handler may call LoopIteration.atEnd { … }
///     LoopIteration.end()            // runs what they deferred
/// }
/// LoopIteration.finish()
/// ```
package enum LoopIteration {
    /// What one thread deferred this round. Reached through a thread-specific pointer, so only
    /// that thread touches it.
    private final class Deferred {
        var bodies: [() -> Void] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // No destructor: `finish()` releases the box; a thread that never calls it leaks one
        // small object, and only event loops call `begin()`.
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    private static var current: Deferred? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<Deferred>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Marks the calling thread as one that runs rounds and calls ``end()`` after each.
    package static func begin() {
        guard current == nil else { return }
        pthread_setspecific(key, Unmanaged.passRetained(Deferred()).toOpaque())
    }

    /// Whether the calling thread runs rounds (between ``begin()`` and ``finish()``).
    package static var isRunning: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` on this thread at the end of its current round.
    /// - Returns: false, and `body` never runs, when this thread runs no rounds: do the work now.
    @discardableResult
    package static func atEnd(_ body: @escaping () -> Void) -> Bool {
        guard let deferred = current else { return false }
        deferred.bodies.append(body)
        return true
    }

    /// Ends the round: runs what was deferred, in order. Work deferred meanwhile runs too.
    package static func end() {
        guard let deferred = current else { return }
        while !deferred.bodies.isEmpty {
            let bodies = deferred.bodies
            deferred.bodies.removeAll(keepingCapacity: true)
            for body in bodies { body() }
        }
    }

    /// Ends the last round and unmarks the thread.
    package static func finish() {
        guard let pointer = pthread_getspecific(key) else { return }
        end()
        pthread_setspecific(key, nil)
        Unmanaged<Deferred>.fromOpaque(pointer).release()
    }
}
