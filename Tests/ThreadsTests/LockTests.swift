import Glibc
import Testing
import Threads

@Suite struct PThreadLockTests {
    /// A plain `Int` read-modify-write from eight threads loses increments unless the lock
    /// really excludes; the total shows it.
    @Test func excludesConcurrentWriters() {
        let counter = PThreadLock(0)
        let threads = (0..<8).map { index in
            NamedThread.start(name: "count-\(index)") {
                for _ in 0..<20_000 {
                    counter.withLock { value in
                        let read = value
                        value = read + 1
                    }
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(counter.withLock { $0 } == 160_000)
    }

    struct Refused: Error, Equatable {}

    @Test func returnsAndRethrowsWhatTheBodyDoes() {
        let lock = PThreadLock([1, 2])
        #expect(lock.withLock { $0.count } == 2)
        #expect(throws: Refused.self) { try lock.withLock { _ in throw Refused() } }
        // The lock was released on the throw: taking it again does not deadlock.
        #expect(lock.withLock { $0.append(3) } == ())
        #expect(lock.withLock { $0 } == [1, 2, 3])
    }
}

@Suite struct ConditionLockTests {
    @Test func excludesConcurrentWriters() {
        let counter = ConditionLock(0)
        let threads = (0..<4).map { index in
            NamedThread.start(name: "cond-\(index)") {
                for _ in 0..<20_000 { counter.withLock { $0 += 1 } }
            }
        }
        for thread in threads { thread.join() }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func timedWaitEndsAtTheTimeoutWhenNothingChanges() {
        let flag = ConditionLock(false)
        let start = monotonicNanoseconds()
        let seen = flag.withLock(waitingUntil: { $0 }, timeout: .milliseconds(200)) { $0 }
        let elapsed = monotonicNanoseconds() - start
        #expect(seen == false)
        #expect(elapsed >= 200_000_000, "woke after \(elapsed) ns, before the timeout")
        #expect(elapsed < 3_000_000_000, "woke after \(elapsed) ns")
    }

    @Test func broadcastEndsATimedWaitEarly() {
        let flag = ConditionLock(false)
        let setter = NamedThread.start(name: "setter") {
            usleep(50_000)
            flag.withLock { $0 = true }
            flag.broadcast()
        }
        let start = monotonicNanoseconds()
        let seen = flag.withLock(waitingUntil: { $0 }, timeout: .seconds(20)) { $0 }
        let elapsed = monotonicNanoseconds() - start
        setter.join()
        #expect(seen == true)
        #expect(elapsed < 10_000_000_000, "the broadcast did not wake the waiter (\(elapsed) ns)")
    }

    @Test func untimedWaitSleepsUntilThePredicateHolds() {
        let queue = ConditionLock<[Int]>([])
        let producer = NamedThread.start(name: "producer") {
            for item in 1...3 {
                usleep(10_000)
                queue.withLock { $0.append(item) }
                queue.broadcast()
            }
        }
        let all = queue.withLock(waitingUntil: { $0.count == 3 }) { state -> [Int] in
            defer { state.removeAll() }
            return state
        }
        producer.join()
        #expect(all == [1, 2, 3])
        #expect(queue.withLock { $0.isEmpty })
    }

    @Test func aPredicateThatHoldsOrANonPositiveTimeoutDoesNotWait() {
        let lock = ConditionLock(7)
        let start = monotonicNanoseconds()
        #expect(lock.withLock(waitingUntil: { $0 == 7 }) { $0 } == 7)
        #expect(lock.withLock(waitingUntil: { $0 == 8 }, timeout: .zero) { $0 } == 7)
        #expect(lock.withLock(waitingUntil: { $0 == 8 }, timeout: .seconds(-5)) { $0 } == 7)
        #expect(monotonicNanoseconds() - start < 1_000_000_000)
    }
}
