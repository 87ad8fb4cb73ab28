import Glibc
import Testing
import Threads

@Suite struct MonotonicClockTests {
    @Test func neverGoesBackward() {
        var previous = monotonicNanoseconds()
        for _ in 0..<100_000 {
            let now = monotonicNanoseconds()
            #expect(now >= previous)
            if now < previous { return }
            previous = now
        }
    }

    @Test func advancesWithTime() {
        let start = monotonicNanoseconds()
        usleep(30_000)
        let elapsed = monotonicNanoseconds() - start
        #expect(elapsed >= 30_000_000, "\(elapsed) ns for a 30 ms sleep")
        #expect(elapsed < 5_000_000_000, "\(elapsed) ns for a 30 ms sleep")
    }

    @Test func durationsInNanoseconds() {
        #expect(Duration.seconds(2).nanoseconds == 2_000_000_000)
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.nanoseconds(7).nanoseconds == 7)
        #expect(Duration.milliseconds(-5).nanoseconds == 0)
        #expect(Duration.seconds(-3).nanoseconds == 0)
        #expect(Duration.seconds(Int64.max).nanoseconds == UInt64.max)
    }
}

@Suite struct NamedThreadTests {
    @Test func runsTheBodyOnANewThreadThatJoinWaitsFor() {
        let seen = PThreadLock<(name: String, same: Bool)?>(nil)
        let caller = pthread_self()
        let thread = NamedThread.start(name: "buzzkit-test") {
            usleep(20_000)
            seen.withLock { $0 = (NamedThread.currentName, pthread_equal(pthread_self(), caller) != 0) }
        }
        #expect(!thread.isCurrent)
        thread.join()
        let result = seen.withLock { $0 }
        #expect(result?.name == "buzzkit-test")
        #expect(result?.same == false)
    }

    @Test func longNamesAreCutToWhatLinuxKeeps() {
        let name = PThreadLock("")
        NamedThread.start(name: "buzzkit-db-checkpoint-thread") {
            name.withLock { $0 = NamedThread.currentName }
        }.join()
        #expect(name.withLock { $0 } == "buzzkit-db-chec")
        // A multi-byte character is not split: "é" (2 bytes) would end at byte 16, so it goes.
        NamedThread.start(name: "abcdefghijklmné") { name.withLock { $0 = NamedThread.currentName } }.join()
        #expect(name.withLock { $0 } == "abcdefghijklmn")
    }

    /// Background threads (the webhook worker) yield to request handling; the nice value must
    /// apply to that thread alone, not to the process.
    @Test func aThreadLowersItsOwnPriorityOnly() {
        let before = NamedThread.currentNiceness
        let target = min(19, before + 5)
        let seen = PThreadLock<(set: Int32?, read: Int32, again: Int32?)?>(nil)
        NamedThread.start(name: "buzzkit-nice") {
            let set = NamedThread.lowerCurrentPriority(to: target)
            let read = NamedThread.currentNiceness
            // Asked for a higher priority than it has, the thread stays where it is.
            let again = NamedThread.lowerCurrentPriority(to: before)
            seen.withLock { $0 = (set, read, again) }
        }.join()
        #expect(seen.withLock { $0 }?.set == target)
        #expect(seen.withLock { $0 }?.read == target)
        #expect(seen.withLock { $0 }?.again == target)
        #expect(NamedThread.currentNiceness == before, "the calling thread keeps its priority")
    }

    @Test func aDetachedThreadRuns() {
        let done = ConditionLock(false)
        NamedThread.detach(name: "detached") {
            done.withLock { $0 = true }
            done.broadcast()
        }
        #expect(done.withLock(waitingUntil: { $0 }, timeout: .seconds(10)) { $0 })
    }

    @Test func isCurrentInsideTheThread() {
        let handle = ConditionLock<NamedThread?>(nil)
        let answer = PThreadLock<Bool?>(nil)
        let thread = NamedThread.start(name: "self-check") {
            // The starter publishes the handle after `start` returns; wait for it, then ask it.
            let published = handle.withLock(waitingUntil: { $0 != nil }) { $0! }
            answer.withLock { $0 = published.isCurrent }
        }
        handle.withLock { $0 = thread }
        handle.broadcast()
        thread.join()
        #expect(answer.withLock { $0 } == true)
    }
}
