import Foundation
import XCTest

@testable import BuzzKit

final class RetryPolicyTests: XCTestCase {
    let policy = RetryPolicy()

    func testBackoffDoublesWithinJitterBoundsAndStopsAtTheCap() {
        for failures in 1...20 {
            let ceiling = min(policy.maxDelay, policy.baseDelay * pow(2, Double(failures - 1)))
            let low = policy.backoff(failures: failures, jitter: 0)
            let high = policy.backoff(failures: failures, jitter: 0.999_999)
            XCTAssertEqual(low, ceiling / 2, accuracy: 1e-9, "failures \(failures)")
            XCTAssertLessThanOrEqual(high, ceiling)
            XCTAssertGreaterThan(high, ceiling * 0.99)
            for _ in 0..<50 {
                let delay = policy.backoff(failures: failures, jitter: Double.random(in: 0..<1))
                XCTAssertTrue((ceiling / 2)...ceiling ~= delay, "\(delay) outside [\(ceiling / 2), \(ceiling)]")
            }
        }
        XCTAssertEqual(policy.backoff(failures: 60, jitter: 1), policy.maxDelay)
    }

    func testFourHundredsAreDroppedExceptTimeoutAndRateLimit() {
        for code in [400, 401, 403, 404, 409, 413, 422] {
            let decision = policy.decide(
                .answered(status: code, retryAfter: nil), failures: 1, answeredFailures: 1, age: 0, exempt: false,
                jitter: 0)
            guard case .drop = decision else { return XCTFail("\(code) must be dropped, got \(decision)") }
        }
        for code in [408, 429, 500, 502, 503] {
            let decision = policy.decide(
                .answered(status: code, retryAfter: nil), failures: 1, answeredFailures: 1, age: 0, exempt: false,
                jitter: 0)
            XCTAssertEqual(decision, .retry(after: 0.5), "\(code)")
        }
        XCTAssertEqual(
            policy.decide(
                .answered(status: 201, retryAfter: nil), failures: 1, answeredFailures: 0, age: 0, exempt: false,
                jitter: 0), .done)
    }

    func testAttemptCapCountsAnsweredFailuresOnlyAndSparesIdentityOperations() {
        let last = policy.decide(
            .answered(status: 503, retryAfter: nil), failures: 10, answeredFailures: 10, age: 0, exempt: false,
            jitter: 0)
        guard case .drop = last else { return XCTFail("the 10th answered failure drops: \(last)") }
        // Offline attempts do not count: an app offline for hours loses nothing.
        let offline = policy.decide(
            .unreachable, failures: 500, answeredFailures: 0, age: 3600, exempt: false, jitter: 0)
        XCTAssertEqual(offline, .retry(after: policy.maxDelay / 2))
        let identify = policy.decide(
            .answered(status: 503, retryAfter: nil), failures: 50, answeredFailures: 50, age: 30 * 86_400,
            exempt: true, jitter: 0)
        guard case .retry = identify else { return XCTFail("identity operations are never capped: \(identify)") }
    }

    func testAgeCapDropsOldOperations() {
        let decision = policy.decide(
            .unreachable, failures: 3, answeredFailures: 0, age: policy.maxAge + 1, exempt: false, jitter: 0)
        guard case .drop = decision else { return XCTFail("past maxAge: \(decision)") }
    }

    func testRetryAfterIsHonouredInSecondsAndAsADate() {
        let decision = policy.decide(
            .answered(status: 429, retryAfter: 120), failures: 1, answeredFailures: 1, age: 0, exempt: false,
            jitter: 0.3)
        XCTAssertEqual(decision, .retry(after: 120))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(RetryPolicy.parseRetryAfter("7", now: now), 7)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        XCTAssertEqual(RetryPolicy.parseRetryAfter(formatter.string(from: now + 90), now: now) ?? -1, 90, accuracy: 1)
        XCTAssertNil(RetryPolicy.parseRetryAfter("soon", now: now))
        // A huge Retry-After is clamped.
        XCTAssertEqual(
            policy.decide(
                .answered(status: 503, retryAfter: 1e9), failures: 1, answeredFailures: 1, age: 0, exempt: false,
                jitter: 0), .retry(after: policy.maxRetryAfter))
    }
}
