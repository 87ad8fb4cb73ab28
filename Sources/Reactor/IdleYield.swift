/// Whether an event loop with nothing ready yields its core before it sleeps (`sched_yield`),
/// and when it stops doing so.
///
/// A yield pays off when the thread it lets run is about to send the loop work and then sleeps:
/// a client, the writer thread. With wrk on the same cores those yields took 32–256 µs
/// (bench/README.md). A thread that never sleeps (a CPU-bound neighbour) keeps the core for its
/// time slice instead, milliseconds, while the loop's next request waits: with a busy process on
/// the loop's core, one connection got 700 answers a second instead of 43,000.
///
/// So the loop keeps a running share of its yields that took longer than `slowNanoseconds`
/// (each yield weighs 1/16), and above `pauseShare` stops yielding for `pauseNanoseconds`. The
/// share, not one slow yield: ~0.4 % of wrk's yields took 0.5–8 ms (the machine's other work).
/// And not several slow in a row: behind a busy neighbour slow yields came between quick ones,
/// and that rule left one connection at 29–37k answers a second against 39–42k. The share is
/// kept across a pause, so a neighbour that is still there pauses yielding again at its first
/// or second slow yield: a slice or two a second.
package struct IdleYield: Sendable {
    package static let slowNanoseconds: UInt64 = 500_000
    package static let pauseNanoseconds: UInt64 = 1_000_000_000
    /// A quarter, in the fixed point of `slowShare` (1 << 16 is all of them).
    package static let pauseShare: UInt32 = 1 << 14

    /// Yielding is off until this instant (`monotonicNanoseconds()`).
    private var pausedUntil: UInt64 = 0
    /// The running share of slow yields, 1 << 16 for all of them.
    private var slowShare: UInt32 = 0

    package init() {}

    /// Whether to yield now.
    package func allowed(at now: UInt64) -> Bool { now >= pausedUntil }

    /// Records a yield that began at `start` and returned at `end`.
    package mutating func yielded(from start: UInt64, to end: UInt64) {
        slowShare -= slowShare >> 4
        guard end &- start > Self.slowNanoseconds else { return }
        slowShare += 1 << 12
        if slowShare > Self.pauseShare { pausedUntil = end &+ Self.pauseNanoseconds }
    }
}
