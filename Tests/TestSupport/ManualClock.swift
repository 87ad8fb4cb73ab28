import Identity
import Synchronization

/// A clock that only moves when a test moves it, so expiries and rate limits are tested
/// without sleeping.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(byMillis: 24 * 3_600_000 + 1)
/// ```
package final class ManualClock: Clock {
    private let millis: Mutex<Int64>

    /// Starts at `millis` (default 2023-11-14T22:13:20Z).
    package init(millis: Int64 = 1_700_000_000_000) { self.millis = Mutex(millis) }

    package func now() -> Timestamp { Timestamp(millis: nowMillis) }

    /// The time in milliseconds since the Unix epoch.
    package var nowMillis: Int64 { millis.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative value).
    package func advance(byMillis delta: Int64) { millis.withLock { $0 += delta } }

    /// Moves the clock forward by `seconds`.
    package func advance(bySeconds seconds: Double) { advance(byMillis: Int64(seconds * 1000)) }
}
