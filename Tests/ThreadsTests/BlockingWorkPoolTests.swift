import Glibc
import Synchronization
import Testing
import Threads

@Suite struct BlockingWorkPoolTests {
    /// Jobs that block (as a read waiting on a database does) run side by side on the threads.
    @Test func blockedJobsRunSideBySide() {
        let pool = BlockingWorkPool(threads: 8, name: "test")
        let running = Atomic<Int>(0)
        let mostAtOnce = Atomic<Int>(0)
        let done = Semaphore()
        for _ in 0..<8 {
            pool.submit {
                let now = running.add(1, ordering: .relaxed).newValue
                mostAtOnce.max(now, ordering: .relaxed)
                usleep(50_000)
                running.subtract(1, ordering: .relaxed)
                done.signal()
            }
        }
        for _ in 0..<8 { done.wait() }
        pool.close()
        #expect(mostAtOnce.load(ordering: .relaxed) > 1, "eight 50 ms jobs on eight threads ran one at a time")
    }

    /// `close` runs what was queued before it returns; a job submitted afterwards runs on the caller.
    @Test func closeDrainsTheQueueAndLaterJobsRunInline() {
        let pool = BlockingWorkPool(threads: 2, name: "test")
        let ran = Atomic<Int>(0)
        for _ in 0..<1000 { pool.submit { ran.add(1, ordering: .relaxed) } }
        pool.close()
        #expect(ran.load(ordering: .relaxed) == 1000)
        pool.submit { ran.add(1, ordering: .relaxed) }
        #expect(ran.load(ordering: .relaxed) == 1001)
    }
}
