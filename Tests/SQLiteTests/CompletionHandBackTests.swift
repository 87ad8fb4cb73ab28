import Foundation
import SQLite
import Synchronization
import Testing
import Threads

/// `DatabaseWriter.submit(_:completesOnCallingLoop:completion:)`: a write submitted on a thread
/// that runs rounds completes on that thread (through its hand-back), not on the completion
/// thread; without the flag, or when the loop refuses, on the completion thread as before.
@Suite struct CompletionHandBackTests {
    let directory = TemporaryDirectory()

    /// A stand-in for an event loop: a thread in `LoopIteration` rounds that runs the tasks
    /// handed back to it, until it is told to stop.
    final class FakeLoop: Sendable {
        let tasks = Mutex<[@Sendable () -> Void]>([])
        let accepting: Bool
        let stopping = Atomic<Bool>(false)
        let thread = Mutex<pthread_t?>(nil)

        init(accepting: Bool) { self.accepting = accepting }

        /// Runs `first` on the loop's thread, then the tasks handed back, until `stop()`.
        func run(_ first: @escaping @Sendable () -> Void) -> Thread {
            let thread = Thread { [self] in
                self.thread.withLock { $0 = pthread_self() }
                let rounds = LoopIteration()
                rounds.enter(handBack: { [self] task in
                    guard accepting else { return false }
                    tasks.withLock { $0.append(task) }
                    return true
                })
                first()
                while !stopping.load(ordering: .acquiring) {
                    let due = tasks.withLock { tasks in
                        defer { tasks = [] }
                        return tasks
                    }
                    for task in due { task() }
                    rounds.end()
                    usleep(200)
                }
                rounds.leave()
            }
            thread.start()
            return thread
        }

        func isLoopThread() -> Bool {
            thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        }

        func stop() { stopping.store(true, ordering: .releasing) }
    }

    /// Where the completion of one write submitted on `loop` ran: on the loop's thread or not.
    private func completionRanOnLoop(accepting: Bool, flag: Bool) throws -> Bool {
        let writer = try DatabaseWriter(path: directory.file("handback-\(accepting)-\(flag).sqlite"))
        defer { writer.close() }
        try writer.write { db in try db.execute("CREATE TABLE t(v INTEGER)") }
        let loop = FakeLoop(accepting: accepting)
        let ranOnLoop = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        _ = loop.run {
            writer.submit(
                { db in try db.execute("INSERT INTO t(v) VALUES (1)") }, completesOnCallingLoop: flag
            ) { result in
                #expect((try? result.get()) != nil)
                ranOnLoop.withLock { $0 = loop.isLoopThread() }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success, "the write never completed")
        loop.stop()
        return try #require(ranOnLoop.withLock { $0 } as Bool?)
    }

    @Test func completesOnTheLoopThatSubmitted() throws {
        #expect(try completionRanOnLoop(accepting: true, flag: true))
    }

    @Test func completesOnTheCompletionThreadWithoutTheFlag() throws {
        #expect(try !completionRanOnLoop(accepting: true, flag: false))
    }

    @Test func completesOnTheCompletionThreadWhenTheLoopRefuses() throws {
        #expect(try !completionRanOnLoop(accepting: false, flag: true))
    }

    /// A closed writer refuses at once, on the calling thread, as documented: not a round later.
    @Test func aClosedWriterRefusesAtOnceEvenOnALoop() throws {
        let writer = try DatabaseWriter(path: directory.file("closed.sqlite"))
        writer.close()
        let loop = FakeLoop(accepting: true)
        let answeredBeforeReturn = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        _ = loop.run {
            let answered = Mutex(false)
            writer.submit({ _ in }, completesOnCallingLoop: true) { result in
                #expect((try? result.get()) == nil, "a closed writer ran a job")
                answered.withLock { $0 = true }
            }
            answeredBeforeReturn.withLock { $0 = answered.withLock { $0 } }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        loop.stop()
        #expect(answeredBeforeReturn.withLock { $0 } == true)
    }
}
