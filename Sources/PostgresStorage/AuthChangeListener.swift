import Glibc
import Postgres
import Synchronization
import Threads

/// A dedicated connection that `LISTEN`s for changes to workspaces, tenants and keys made by any
/// server, and calls `onChange` for each batch of notifications.
///
/// When the connection dies it is reopened, and `onChange` runs once it listens again: whatever
/// was announced meanwhile is lost, so everything cached must go. (The auth cache's 1-second
/// lifetime bounds the staleness while the listener is down.)
final class AuthChangeListener: Sendable {
    private let url: String
    private let channel: String
    private let onChange: @Sendable () -> Void
    private let stopped = Atomic<Bool>(false)
    private let finished = Semaphore()
    private let started = Atomic<Bool>(false)
    private let reconnectCount = Atomic<Int>(0)
    private let listening = Atomic<Bool>(false)

    init(url: String, channel: String, onChange: @escaping @Sendable () -> Void) {
        self.url = url
        self.channel = channel
        self.onChange = onChange
    }

    /// Times the connection was reopened after failing.
    var reconnects: Int { reconnectCount.load(ordering: .relaxed) }

    /// Starts the listening thread (once) and waits up to `timeout` for its first `LISTEN`, so
    /// a server accepts requests only once it hears other servers' changes (a database that is
    /// down at start-up is not waited for longer: the cache's 1-second lifetime covers that).
    func start(timeout: Duration = .seconds(5)) {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        NamedThread.detach(name: "pg-listen") { [self] in
            run()
            finished.signal()
        }
        let deadline = monotonicNanoseconds() &+ timeout.nanoseconds
        while !listening.load(ordering: .acquiring) && monotonicNanoseconds() < deadline { usleep(2_000) }
    }

    /// Stops the thread and waits for it (at most one poll interval).
    func stop() {
        stopped.store(true, ordering: .relaxed)
        if started.load(ordering: .relaxed) { finished.wait() }
    }

    private func run() {
        while !stopped.load(ordering: .relaxed) {
            do {
                let connection = try Connection(url: url)
                defer { connection.close() }
                try connection.execute("LISTEN \(channel)")
                // Whatever changed before this LISTEN was not heard: drop it all.
                onChange()
                listening.store(true, ordering: .releasing)
                while !stopped.load(ordering: .relaxed) {
                    if !(try connection.notifications(timeout: .milliseconds(200))).isEmpty { onChange() }
                }
            } catch {
                // The server restarted or the network broke: flush, wait a little, reconnect.
                reconnectCount.add(1, ordering: .relaxed)
                onChange()
                usleep(200_000)
            }
        }
    }
}
