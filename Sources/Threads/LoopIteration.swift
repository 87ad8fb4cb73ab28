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
/// let rounds = LoopIteration()       // owned by the loop
/// rounds.enter()                     // on the loop's thread, before its first round
/// while running {
///     wait(); handleEvents()         // a handler may call LoopIteration.atEnd { … }
///     rounds.end()                   // runs what they deferred
/// }
/// rounds.leave()
/// ```
package final class LoopIteration {
    /// What was deferred this round. Only the thread that entered touches it, never through
    /// overlapping accesses, so the run-time exclusivity checks are skipped: they were ~200
    /// instructions a `/healthz` (callgrind, ~2 requests a round).
    @exclusivity(unchecked) private var bodies: [() -> Void] = []
    /// What `end` is running: the two arrays swap, so neither is allocated again each round.
    @exclusivity(unchecked) private var running: [() -> Void] = []
    /// Queues a task to run on this thread in a later round, from any thread; false once the
    /// thread runs no more rounds. Given by the loop (its task queue) from `enter` to `leave`.
    package typealias HandBack = @Sendable (@escaping @Sendable () -> Void) -> Bool
    private var handBack: HandBack?

    /// The calling thread's rounds, unretained: the owner keeps them from `enter` to `leave`.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    package init() {}

    /// Makes these the calling thread's rounds. Keep `self` alive until ``leave()``.
    /// - Parameter handBack: how other threads queue work for this thread (``handBackToCurrent``).
    package func enter(handBack: HandBack? = nil) {
        self.handBack = handBack
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Ends the round: runs what was deferred, in order; work deferred meanwhile runs too.
    /// Costs one check when nothing was (most rounds of a loop that reads no SQLite).
    package func end() {
        // A copy of `bodies` emptied in place made the array anew every round (it was shared),
        // and that copy was freed after: two allocations a round (callgrind).
        while !bodies.isEmpty {
            swap(&bodies, &running)
            for index in running.indices { running[index]() }
            running.removeAll(keepingCapacity: true)
        }
    }

    /// Ends the last round and unmarks the thread.
    package func leave() {
        end()
        handBack = nil
        pthread_setspecific(Self.key, nil)
    }

    /// Whether the calling thread runs rounds (between an ``enter()`` and its ``leave()``).
    package static var isRunning: Bool { pthread_getspecific(key) != nil }

    /// How work finished on another thread comes back to the calling thread's loop (nil on a
    /// thread that runs no rounds, or whose loop takes no tasks). The database writer uses it to
    /// run a write's completion on the loop that asked for the write.
    package static var handBackToCurrent: HandBack? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<LoopIteration>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.handBack }
    }

    /// Runs `body` on this thread at the end of its current round.
    /// - Returns: false, and `body` never runs, when this thread runs no rounds: do the work now.
    @discardableResult
    package static func atEnd(_ body: @escaping () -> Void) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        Unmanaged<LoopIteration>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.bodies.append(body) }
        return true
    }
}
