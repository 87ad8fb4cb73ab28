import Reactor

/// Which event loop a connection lives on after it was accepted.
///
/// Connections are handed to the loops round-robin when accepted. With `.byIncomingCPU`, a
/// connection between requests (its first one, then every 64th read) moves to the loop that
/// serves the CPU the kernel receives its packets on, so the connections of one client thread,
/// or of one NIC receive queue, share a loop. The scheduler then keeps that loop on the CPU
/// where their packets are handled: socket buffers, wake-ups and the loop's own data stay on one
/// core instead of crossing between two on every request. With wrk's two threads on the same
/// two cores, `/healthz` at 64 connections rose from nginx's rate to ~1.5 times it
/// (bench/README.md, "Connections follow their CPU").
///
/// A move never makes the loops unequal by more than `LoopBalance.slack` connections, so
/// clients whose packets all arrive on one CPU (a single-queue NIC, one proxy thread) still
/// spread over every loop.
package enum ConnectionPlacement: Sendable {
    /// Accepted round-robin and never moved.
    case roundRobin
    /// Moved to loop `incoming CPU % loop count` when that keeps the loops balanced.
    case byIncomingCPU
    /// For tests: the loop index a connection's socket should be on (taken modulo the loop
    /// count), asked where `.byIncomingCPU` asks the kernel; nil leaves it where it is.
    case custom(@Sendable (_ fd: Int32) -> Int?)

    /// How often a connection asks: at its first read, then every this many reads.
    static let readsBetweenChecks: UInt64 = 64

    /// The loop index `fd` should be on, or nil for "where it is".
    func preferredLoop(of fd: Int32, loopCount: Int) -> Int? {
        guard loopCount > 1 else { return nil }
        let wanted: Int?
        switch self {
        case .roundRobin: return nil
        case .byIncomingCPU: wanted = Socket.incomingCPU(fd)
        case .custom(let choose): wanted = choose(fd)
        }
        guard let wanted, wanted >= 0 else { return nil }
        return wanted % loopCount
    }
}

/// The balance rule a move must keep: counted in open connections per loop.
enum LoopBalance {
    /// How far apart the busiest and the idlest loop may be after a move: 4, or a sixteenth of
    /// all connections. Clients on one CPU then leave the loops within ~3 % of an even split.
    static func slack(total: Int) -> Int { max(4, total / 16) }

    /// Whether moving one connection from loop `from` to loop `to`, given each loop's open
    /// connections now, leaves the busiest loop within `slack` of the idlest one.
    static func allowsMove(from: Int, to: Int, counts: [Int]) -> Bool {
        guard from != to, counts.indices.contains(from), counts.indices.contains(to) else { return false }
        var after = counts
        after[from] -= 1
        after[to] += 1
        let total = counts.reduce(0, +)
        return after[to] - (after.min() ?? 0) <= slack(total: total)
    }
}
