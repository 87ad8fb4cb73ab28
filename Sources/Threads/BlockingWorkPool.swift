/// Threads for work that may block on something slow and outside the process (a read waiting
/// on a database server), so that an event loop never waits: it hands the work over and goes
/// on serving its other connections.
///
/// ```swift
/// let pool = BlockingWorkPool(threads: 32, name: "read")
/// pool.submit { answer(readFromDatabase()) }
/// pool.close()   // runs what was queued, then joins the threads
/// ```
package final class BlockingWorkPool: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        /// Jobs before it were taken; the array is compacted once they are most of it.
        var head = 0
        var closed = false
        var isEmpty: Bool { head == jobs.count }
    }

    private let queue = ConditionLock(Queue())
    private let threads: [NamedThread]

    /// Starts `threads` threads named `name-0`, `name-1`, …
    package init(threads count: Int, name: String) {
        let queue = self.queue
        threads = (0..<max(1, count)).map { index in
            NamedThread.start(name: "\(name)-\(index)") { Self.work(queue) }
        }
    }

    /// Runs `job` on one of the threads, in submission order among the jobs waiting. After
    /// `close`, runs it on the caller's thread.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        let accepted = queue.withLock { q in
            guard !q.closed else { return false }
            q.jobs.append(job)
            return true
        }
        guard accepted else { return job() }
        queue.signal()
    }

    /// Runs every job already submitted, then stops the threads and waits for them.
    package func close() {
        queue.withLock { $0.closed = true }
        queue.broadcast()
        for thread in threads { thread.join() }
    }

    private static func work(_ queue: ConditionLock<Queue>) {
        while true {
            let job: (@Sendable () -> Void)? = queue.withLock(waitingUntil: { !$0.isEmpty || $0.closed }) { q in
                guard !q.isEmpty else { return nil }
                let job = q.jobs[q.head]
                q.head += 1
                if q.head == q.jobs.count {
                    q.jobs.removeAll(keepingCapacity: true)
                    q.head = 0
                } else if q.head > 1024, q.head * 2 > q.jobs.count {
                    q.jobs.removeFirst(q.head)
                    q.head = 0
                }
                return job
            }
            guard let job else { return }
            job()
        }
    }
}
