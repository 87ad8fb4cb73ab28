import Crypto
import Identity
import JSON
import Synchronization

/// Request ids: a random per-process prefix and a counter, so minting one costs no syscall.
///
/// At most 15 bytes for the first 36⁶ (2.2 billion) requests of a process: Swift keeps a string
/// that short inside the value itself, so the id a request copies into its context, its log line
/// and its `X-Request-Id` field allocates nothing and is retained by no one. With an 8-character
/// prefix every id past request 46,656 took a heap allocation and ~20 atomic reference-count
/// operations (callgrind, `bench/request-instructions.sh`).
enum RequestIDs {
    /// 62⁵ (~916 million) prefixes: enough to tell one process's ids from another's in a log.
    private static let prefix = SecureRandom.token(length: 5)
    /// `req_` and the prefix, as bytes: `mint` copies them and writes the counter after them.
    private static let head = Array(("req_" + prefix).utf8)
    private static let counter = Atomic<UInt64>(0)
    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    /// `req_` + prefix + counter in base 36 (as `String(n, radix: 36)`), built in one
    /// allocation rather than through two concatenations.
    static func mint() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        var digitCount = 1
        var rest = n / 36
        while rest > 0 {
            digitCount += 1
            rest /= 36
        }
        return head.withUnsafeBufferPointer { head in
            String(unsafeUninitializedCapacity: head.count + digitCount) { out in
                _ = out.initialize(from: head)
                var value = n
                // Digits from the last one backwards.
                for position in (head.count..<head.count + digitCount).reversed() {
                    out[position] = digits[Int(value % 36)]
                    value /= 36
                }
                return head.count + digitCount
            }
        }
    }
}

/// Counts app calls made without a proof over the last 24 hours, per tenant, in hourly buckets,
/// so a team can see when enforcing verification is safe. In memory: a restart starts from zero.
/// Used when the store does not keep the count itself (SQLite: one process serves the file).
final class UnverifiedCallCounter: UnverifiedCallLedger {
    private let state = Mutex<[String: [Int64: Int]]>([:])

    /// Called on the writer thread for every unproven app call (most identifies of a tenant that
    /// does not verify yet): the tenant's hours are counted in place. Taking them out and
    /// storing them back copied the whole dictionary each call (~2k instructions per identify).
    func recordUnverifiedCall(tenantID: String, nowMillis: Int64) {
        let hour = nowMillis / 3_600_000
        state.withLock { tenants in
            tenants[tenantID, default: [:]][hour, default: 0] += 1
            if let hours = tenants[tenantID], hours.count > 25 {
                tenants[tenantID] = hours.filter { $0.key > hour - 24 }
            }
        }
    }

    func unverifiedCalls(tenantID: String, nowMillis: Int64) -> Int {
        let hour = nowMillis / 3_600_000
        return state.withLock { tenants in
            (tenants[tenantID] ?? [:]).filter { $0.key > hour - 24 }.values.reduce(0, +)
        }
    }
}

/// Every error becomes an envelope: known refusals keep their code, anything else is a 500
/// whose message says nothing of the internals (the details go to the log with the request id).
enum ErrorMapping {
    static func apiError(for error: any Error, logger: Logger, requestID: String, route: String) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as IdentityError:
            if error.code == .unavailable {
                logger.log(
                    .warn, "storage unavailable",
                    ["requestId": .string(requestID), "route": .string(route), "reason": .string(error.message)])
            }
            return APIError(error)
        case let error as ProofFailure:
            return APIError(error.identityError)
        default:
            logger.log(
                .error, "unhandled error",
                ["requestId": .string(requestID), "route": .string(route), "error": .string(String(describing: error))])
            return .internalError
        }
    }
}
