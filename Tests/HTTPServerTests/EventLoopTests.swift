import Dispatch
import Foundation
import Glibc
import Reactor
import Synchronization
import Testing
import Threads

@Suite struct EventLoopTests {
    @Test func executeFromAnotherThreadWakesTheLoopPromptly() throws {
        let loop = try EventLoop(name: "test")
        loop.start()
        defer { loop.stop() }
        for _ in 0..<5 {
            usleep(20_000)
            let done = DispatchSemaphore(value: 0)
            let start = monotonicNanoseconds()
            loop.execute { done.signal() }
            #expect(done.wait(timeout: .now() + 2) == .success)
            #expect(monotonicNanoseconds() - start < 50_000_000)
        }
    }

    /// A wake-up that arrives while the loop is consuming the previous one must not be lost:
    /// clearing the pending flag before draining the eventfd left the flag set with no signal
    /// queued, so every later `execute` (the shutdown's `stop` included) waited forever.
    @Test func concurrentExecutesNeverLoseAWakeup() throws {
        let loop = try EventLoop(name: "wakeups")
        loop.start()
        var lost = false
        // With the bug the loop can no longer be woken, so `stop` would wait forever: leak it.
        defer { if !lost { loop.stop() } }
        for round in 0..<20 {
            // Executes from several threads at once race the loop's handling of each wake-up.
            let ran = Atomic<Int>(0)
            let threads = (0..<4).map { _ in
                Thread {
                    for _ in 0..<20_000 { loop.execute { ran.add(1, ordering: .relaxed) } }
                }
            }
            for thread in threads { thread.start() }
            while ran.load(ordering: .relaxed) < 80_000 {
                let before = ran.load(ordering: .relaxed)
                usleep(200_000)
                if ran.load(ordering: .relaxed) == before, threads.allSatisfy({ $0.isFinished }) { break }
            }
            // Then, with the loop idle, a lone execute must still run.
            let done = DispatchSemaphore(value: 0)
            loop.execute { done.signal() }
            if done.wait(timeout: .now() + 2) != .success {
                lost = true
                Issue.record(
                    "round \(round): a lone execute never ran (the wake-up was lost); \(ran.load(ordering: .relaxed)) of 80000 ran"
                )
                return
            }
        }
    }

    /// What a handler defers with `LoopIteration.atEnd` (the SQLite readers' shared transaction)
    /// runs before the loop's next wake-up does anything else.
    @Test func workDeferredToTheWakeUpsEndRunsBeforeTheNextWakeUp() throws {
        let loop = try EventLoop(name: "rounds")
        loop.start()
        defer { loop.stop() }
        let order = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            let deferred = LoopIteration.atEnd { order.withLock { $0.append("end of the first") } }
            order.withLock { $0.append(deferred ? "deferred" : "refused") }
            // Queued while tasks run: the loop runs it in its next round.
            loop.execute {
                order.withLock { $0.append("second") }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 2) == .success)
        #expect(order.withLock { $0 } == ["deferred", "end of the first", "second"])
        #expect(!LoopIteration.isRunning && !LoopIteration.atEnd {}, "a test's thread runs no rounds")
    }

    /// A loop hands its thread's work back through `LoopIteration`: the hand-back runs a task on
    /// the loop while it runs, and refuses once it stopped (the holder then runs the task itself).
    @Test func handBackRunsOnTheLoopUntilItStops() throws {
        let loop = try EventLoop(name: "handback")
        loop.start()
        let handBack = Mutex<LoopIteration.HandBack?>(nil)
        let got = DispatchSemaphore(value: 0)
        loop.execute {
            handBack.withLock { $0 = LoopIteration.handBackToCurrent }
            got.signal()
        }
        #expect(got.wait(timeout: .now() + 2) == .success)
        let give = try #require(handBack.withLock { $0 })
        let ranOnLoop = Mutex<Bool?>(nil)
        let ran = DispatchSemaphore(value: 0)
        #expect(
            give {
                ranOnLoop.withLock { $0 = loop.inEventLoop }
                ran.signal()
            })
        #expect(ran.wait(timeout: .now() + 2) == .success)
        #expect(ranOnLoop.withLock { $0 } == true)
        loop.stop()
        #expect(!give { Issue.record("a task ran on a stopped loop") })
        #expect(LoopIteration.handBackToCurrent == nil, "a thread without rounds has no hand-back")
    }

    @Test func timersFireInDeadlineOrder() throws {
        let loop = try EventLoop(name: "timers")
        loop.start()
        defer { loop.stop() }
        let order = PThreadLock<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            let now = monotonicNanoseconds()
            loop.scheduleTimer(at: now + 30_000_000) {
                order.withLock { $0.append(3) }; done.signal()
            }
            loop.scheduleTimer(at: now + 10_000_000) { order.withLock { $0.append(1) } }
            let cancelled = loop.scheduleTimer(at: now + 15_000_000) { order.withLock { $0.append(99) } }
            loop.scheduleTimer(at: now + 20_000_000) { order.withLock { $0.append(2) } }
            loop.cancelTimer(cancelled)
        }
        #expect(done.wait(timeout: .now() + 2) == .success)
        #expect(order.withLock { $0 } == [1, 2, 3])
    }
}
