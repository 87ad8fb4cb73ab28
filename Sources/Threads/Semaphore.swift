/// A counting semaphore over a ``ConditionLock``: "wait until a thread I started says it has
/// finished", without Dispatch.
///
/// ```swift
/// let finished = Semaphore()
/// NamedThread.detach(name: "pg-listen") { listen(); finished.signal() }
/// finished.wait()
/// ```
package final class Semaphore: Sendable {
    private let count = ConditionLock(0)

    /// Starts at zero: the first ``wait()`` sleeps until a ``signal()``.
    package init() {}

    /// Adds one and wakes the waiters.
    package func signal() {
        count.withLock { $0 += 1 }
        count.broadcast()
    }

    /// Sleeps until the count is positive, then takes one.
    package func wait() {
        count.withLock(waitingUntil: { $0 > 0 }) { $0 -= 1 }
    }
}
