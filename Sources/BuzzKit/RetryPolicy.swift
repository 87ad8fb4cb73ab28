import Foundation

/// What came back for one request.
enum DeliveryOutcome: Sendable, Equatable {
    /// The server answered.
    case answered(status: Int, retryAfter: TimeInterval?)
    /// No answer: offline, refused, reset, timed out.
    case unreachable
}

/// What to do with an operation after an attempt.
enum RetryDecision: Sendable, Equatable {
    case done
    /// Given up; the reason is logged.
    case drop(reason: String)
    case retry(after: TimeInterval)
}

/// The retry table: which answers are final, and how long to wait before the next attempt.
///
/// - 2xx: done. 408, 429 and 5xx: retried, counted against `maxAttempts`. Other 4xx: dropped (the
///   request itself is wrong; sending it again cannot help) and logged.
/// - No answer (offline): retried with the same backoff, but not counted, so an app offline for a
///   day loses nothing; only `maxAge` ends it.
/// - Identity operations (identify, logout's push deletion) are exempt from both caps: everything
///   queued after them depends on them.
public struct RetryPolicy: Sendable, Equatable {
    /// First backoff delay.
    public var baseDelay: TimeInterval = 1
    /// Longest backoff delay (the exponential stops growing here).
    public var maxDelay: TimeInterval = 300
    /// Answered failures (408, 429, 5xx) before an operation is dropped.
    public var maxAttempts: Int = 10
    /// Age after which a failing operation is dropped.
    public var maxAge: TimeInterval = 7 * 86_400
    /// Longest `Retry-After` honoured; a larger one is clamped here.
    public var maxRetryAfter: TimeInterval = 3600

    public init() {}

    /// Backoff before attempt `failures + 1`: `base * 2^(failures-1)` capped at `maxDelay`, with
    /// equal jitter (half fixed, half random), so a fleet that failed together does not retry together.
    func backoff(failures: Int, jitter: Double) -> TimeInterval {
        let exponent = min(max(failures - 1, 0), 40)
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(exponent)))
        return ceiling / 2 + ceiling / 2 * jitter
    }

    /// The decision after an attempt.
    /// - Parameters:
    ///   - failures: failed attempts so far, this one included (offline ones too: they drive the backoff).
    ///   - answeredFailures: failed attempts the server answered, this one included.
    ///   - age: time since the operation was queued.
    ///   - exempt: an identity operation, which no cap drops.
    func decide(
        _ outcome: DeliveryOutcome, failures: Int, answeredFailures: Int, age: TimeInterval, exempt: Bool,
        jitter: Double
    ) -> RetryDecision {
        var retryAfter: TimeInterval? = nil
        switch outcome {
        case .answered(let status, let after):
            if (200..<300).contains(status) { return .done }
            if (400..<500).contains(status) && status != 408 && status != 429 {
                return .drop(reason: "refused with \(status)")
            }
            if !exempt && answeredFailures >= maxAttempts {
                return .drop(reason: "\(answeredFailures) attempts failed, last with \(status)")
            }
            retryAfter = after
        case .unreachable:
            break
        }
        if !exempt && age >= maxAge { return .drop(reason: "older than \(Int(maxAge)) s") }
        let delay = backoff(failures: failures, jitter: jitter)
        if let retryAfter { return .retry(after: max(delay, min(max(retryAfter, 0), maxRetryAfter))) }
        return .retry(after: delay)
    }

    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3).
    static func parseRetryAfter(_ value: String?, now: Date) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Double(value) { return max(seconds, 0) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        return max(date.timeIntervalSince(now), 0)
    }
}
