import CLinux
import Glibc

/// A pthread started to run one closure, named after its job.
///
/// Foundation's `Thread` was the only reason the server's modules imported Foundation; they need
/// nothing more of a thread than "run this", "wait for it" and "is this it". The name is what
/// `top -H`, gdb and `/proc/<pid>/task/*/comm` show.
///
/// ```swift
/// let loop = NamedThread.start(name: "http-0") { eventLoop.run() }
/// loop.join()
/// NamedThread.detach(name: "db-writer") { writer.run() }
/// ```
package struct NamedThread: Sendable {
    /// Linux keeps 15 bytes of a thread's name (plus the NUL); longer names are cut there.
    package static let maximumNameBytes = 15

    private let thread: pthread_t

    /// Starts `body` on a new joinable thread; ``join()`` it exactly once.
    /// - Parameters:
    ///   - name: The thread's name, cut to ``maximumNameBytes`` bytes.
    ///   - body: What the thread runs; the thread ends when it returns.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> NamedThread {
        NamedThread(thread: create(name: name, body))
    }

    /// Starts `body` on a new detached thread, which nobody waits for.
    package static func detach(name: String, _ body: @escaping @Sendable () -> Void) {
        pthread_detach(create(name: name, body))
    }

    /// Waits for the thread to end. Not from the thread itself (that would wait forever).
    package func join() {
        precondition(!isCurrent, "a thread cannot join itself")
        pthread_join(thread, nil)
    }

    /// True when called on this thread.
    package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Lowers the calling thread's scheduling priority to `niceness` (0 normal … 19 lowest), for
    /// background work that must yield the cores to request handling when both want them; a thread
    /// already at a lower priority (the whole server started with `nice`) stays there. On Linux a
    /// nice value belongs to a thread, and `setpriority(PRIO_PROCESS, 0, …)` sets the calling
    /// thread's. Returns the niceness the thread now has, or nil when the call failed (the thread
    /// then runs as before).
    @discardableResult
    package static func lowerCurrentPriority(to niceness: Int32) -> Int32? {
        let target = max(currentNiceness, niceness)
        guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, target) == 0 else { return nil }
        return currentNiceness
    }

    /// The calling thread's nice value.
    package static var currentNiceness: Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }

    /// The calling thread's name, as the kernel keeps it.
    package static var currentName: String {
        var buffer = [CChar](repeating: 0, count: maximumNameBytes + 1)
        guard pthread_getname_np(pthread_self(), &buffer, buffer.count) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The calling thread's kernel id (its directory under `/proc/self/task`), 0 if unknown.
    /// Read from the `/proc/thread-self` link: Glibc's module does not export `gettid`.
    package static var currentKernelID: Int32 {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard n > 0 else { return 0 }
        // "<pid>/task/<tid>"
        let link = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return link.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    private static func create(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                let context = Unmanaged<Context>.fromOpaque(argument!).takeRetainedValue()
                // Named from inside: the thread may already be running when `pthread_create`
                // returns, so naming it from the caller would race with its first reports.
                pthread_setname_np(pthread_self(), context.name)
                context.body()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            // Every caller (event loops, the database writer) cannot run without its thread:
            // not a recoverable state.
            fatalError("pthread_create failed for \(name): errno \(result)")
        }
        return thread
    }

    /// What the new thread runs, moved to it through the `void *` argument.
    private final class Context: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            // Cut on a UTF-8 boundary: the kernel refuses (ERANGE) a name over 15 bytes.
            var cut = ""
            for character in name {
                guard cut.utf8.count + character.utf8.count <= NamedThread.maximumNameBytes else { break }
                cut.append(character)
            }
            self.name = cut
            self.body = body
        }
    }
}
