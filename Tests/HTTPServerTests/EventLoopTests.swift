import Dispatch
import Glibc
import Reactor
import Synchronization
import Testing

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

    @Test func timersFireInDeadlineOrder() throws {
        let loop = try EventLoop(name: "timers")
        loop.start()
        defer { loop.stop() }
        let order = Mutex<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            let now = monotonicNanoseconds()
            loop.scheduleTimer(at: now + 30_000_000) { order.withLock { $0.append(3) }; done.signal() }
            loop.scheduleTimer(at: now + 10_000_000) { order.withLock { $0.append(1) } }
            let cancelled = loop.scheduleTimer(at: now + 15_000_000) { order.withLock { $0.append(99) } }
            loop.scheduleTimer(at: now + 20_000_000) { order.withLock { $0.append(2) } }
            loop.cancelTimer(cancelled)
        }
        #expect(done.wait(timeout: .now() + 2) == .success)
        #expect(order.withLock { $0 } == [1, 2, 3])
    }
}
