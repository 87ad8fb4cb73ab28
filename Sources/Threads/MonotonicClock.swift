import Glibc

/// Monotonic time in nanoseconds (`CLOCK_MONOTONIC`): deadlines and durations never jump with
/// wall time. The one clock of the server's modules (the event loop's timers, request durations,
/// condition waits); wall-clock time is only for timestamps.
@inlinable
package func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds, clamped at zero (and at `UInt64.max`, some 584 years).
    package var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        // Both parts carry the sign; a negative duration is no time at all.
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflowAdding) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflowAdding ? .max : total
    }
}
