import Glibc
import Postgres

/// A detached pthread running one closure: the writers, the listener, the usage flush. (Foundation's
/// Thread is not used: the store needs no Foundation.)
final class BackgroundThread: @unchecked Sendable {
    private let body: () -> Void

    init(_ body: @escaping () -> Void) { self.body = body }

    func start() {
        let unmanaged = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { pointer in
                let thread = Unmanaged<BackgroundThread>.fromOpaque(pointer!).takeRetainedValue()
                thread.body()
                return nil
            }, unmanaged.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(thread)
    }
}

/// A counting semaphore over a ``ConditionLock`` (no Foundation or Dispatch in the store).
final class Semaphore: Sendable {
    private let state = ConditionLock(0)

    func signal() {
        state.withLock { $0 += 1 }
        state.broadcast()
    }

    func wait() {
        state.withLock(waitingUntil: { $0 > 0 }) { $0 -= 1 }
    }
}
