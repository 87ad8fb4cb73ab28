import Foundation

/// Wall time, injected so tests can move it.
protocol WallClock: Sendable {
    func now() -> Date
}

struct SystemWallClock: WallClock {
    func now() -> Date { Date() }
}

/// What one delivery step did.
enum DeliveryStep: Sendable, Equatable {
    /// Nothing queued.
    case idle
    /// A request for `count` operations was accepted.
    case sent(count: Int)
    /// A request for `count` operations was given up (refused, or past a cap).
    case dropped(count: Int)
    /// The head was rewritten and goes again at once.
    case again
    /// The head waits for its next attempt.
    case waiting(until: Date)
}

/// The one thread that sends: it takes the queue's head, sends it, and sleeps until there is
/// more to do or the next retry is due. One sender is what keeps the order.
final class DeliveryThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var kicked = false
    private var stopped = false

    /// Starts the thread; `step` returns nil once the client is gone.
    func start(_ step: @escaping @Sendable () -> DeliveryStep?) {
        let thread = Thread { [self] in
            while true {
                guard let outcome = step() else { return }
                switch outcome {
                case .sent, .dropped, .again: continue
                case .idle: if !wait(until: nil) { return }
                case .waiting(let until): if !wait(until: until) { return }
                }
            }
        }
        thread.name = "BuzzKit delivery"
        thread.qualityOfService = .utility
        thread.start()
    }

    /// Wakes the thread: new work, or a flush.
    func kick() {
        condition.lock()
        kicked = true
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    /// Sleeps until kicked or `until`; false once stopped.
    private func wait(until: Date?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !kicked && !stopped {
            if let until {
                if !condition.wait(until: until) { break }
            } else {
                condition.wait()
            }
        }
        kicked = false
        return !stopped
    }
}
