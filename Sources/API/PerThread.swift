import Glibc
import Synchronization

/// State that every request changes on both event loops (request counters, the auth cache),
/// kept once per thread: each thread takes its own lock and writes its own cache lines, where
/// one shared copy made the loops queue on one lock and bounce its line (and the reference
/// counts of the objects in it) between the cores every request. Readers that need all of it
/// (a metrics scrape, an invalidation) visit every copy.
final class PerThread<Value: Sendable>: Sendable {
    private final class Slot: Sendable {
        let value: Mutex<Value>
        // Keeps slots allocated one after another on separate cache lines.
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        init(_ value: Value) { self.value = Mutex(value) }
    }
    /// More than the threads that serve requests; threads past it share (by `ThreadSlot`).
    private static var slotCount: Int { 16 }
    private let slots: [Slot]

    init(_ makeValue: () -> Value) {
        slots = (0..<Self.slotCount).map { _ in Slot(makeValue()) }
    }

    /// `body` on the calling thread's copy, under its lock.
    func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try slots[ThreadSlot.current % Self.slotCount].value.withLock { try body(&$0) }
    }

    /// `body` on every thread's copy in turn, each under its own lock.
    func forEach(_ body: (inout Value) -> Void) {
        for slot in slots { slot.value.withLock { body(&$0) } }
    }
}

/// A small number per thread, handed out in order of first use, so each event loop thread
/// gets its own copy of a `PerThread` without a shared lock. Read through a pthread key: cheap,
/// and threads that come and go (tests) just take new numbers.
enum ThreadSlot {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()
    private static let next = Atomic<Int>(0)

    static var current: Int {
        if let stored = pthread_getspecific(key) { return Int(bitPattern: stored) - 1 }
        let slot = next.add(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: slot + 1))
        return slot
    }
}
