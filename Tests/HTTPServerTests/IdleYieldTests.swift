import Reactor
import Testing

/// The rule that stops an event loop yielding its core behind a neighbour that keeps it.
@Suite struct IdleYieldTests {
    static let quick: UInt64 = 100_000  // 100 µs: a client that answers and sleeps
    static let slow: UInt64 = 2_400_000  // 2.4 ms: a busy neighbour's time slice

    @Test func quickYieldsNeverPause() {
        var rule = IdleYield()
        var now: UInt64 = 1_000_000_000
        for _ in 0..<10_000 {
            #expect(rule.allowed(at: now))
            rule.yielded(from: now, to: now + Self.quick)
            now += Self.quick + 10_000
        }
    }

    /// wrk's own yields: about one in 250 took longer than half a millisecond.
    @Test func aRareSlowYieldDoesNotPause() {
        var rule = IdleYield()
        var now: UInt64 = 1_000_000_000
        for index in 0..<10_000 {
            #expect(rule.allowed(at: now))
            let took = index % 250 == 249 ? 8_000_000 : Self.quick
            rule.yielded(from: now, to: now + took)
            now += took + 10_000
        }
    }

    /// Behind a busy neighbour the slow yields alternate with quick ones; yielding stops within a
    /// few of them, for a second, and a neighbour still there stops it again at the first slow one.
    @Test func slowYieldsAmongQuickOnesPauseForASecond() {
        var rule = IdleYield()
        var now: UInt64 = 1_000_000_000
        var slowOnes = 0
        while rule.allowed(at: now) {
            rule.yielded(from: now, to: now + Self.slow)
            now += Self.slow
            slowOnes += 1
            rule.yielded(from: now, to: now + Self.quick)
            now += Self.quick
        }
        #expect(slowOnes <= 8)
        #expect(!rule.allowed(at: now + IdleYield.pauseNanoseconds - 1_000_000))
        now += IdleYield.pauseNanoseconds
        #expect(rule.allowed(at: now))
        rule.yielded(from: now, to: now + Self.slow)
        #expect(!rule.allowed(at: now + Self.slow + 1))
    }

    /// Once the neighbour has gone, quick yields bring the share down and yielding stays on.
    @Test func yieldingResumesForGoodOnceYieldsAreQuickAgain() {
        var rule = IdleYield()
        var now: UInt64 = 1_000_000_000
        while rule.allowed(at: now) {
            rule.yielded(from: now, to: now + Self.slow)
            now += Self.slow
        }
        now += IdleYield.pauseNanoseconds
        for _ in 0..<1_000 {
            #expect(rule.allowed(at: now))
            rule.yielded(from: now, to: now + Self.quick)
            now += Self.quick
        }
    }
}
