/// The identity secrets of one tenant that currently verify proofs.
///
/// An identity secret is the string the server hands out, `bk_isec_` followed by 43 base62
/// characters (about 256 bits). The HMAC key is the UTF-8 of that whole string, prefix
/// included, so a backend can pass it as-is, e.g. `createHmac('sha256', secret)` in Node or
/// `hmac.new(secret.encode(), …)` in Python; see ``IdentityVerifier/key(fromSecret:)``.
///
/// During a rotation the previous secret keeps verifying until `previousExpiresAt`
/// (API.md §9: 24 hours), so apps holding old proofs are not logged out mid-rollout.
package struct IdentitySecretSet: Sendable, Hashable {
    /// HMAC key of the current secret.
    package var current: [UInt8]
    /// HMAC key of the secret replaced by the last rotation, if any.
    package var previous: [UInt8]?
    /// When `previous` stops verifying, in milliseconds since the Unix epoch.
    package var previousExpiresAt: Int64?

    /// A set of keys; `previous` without `previousExpiresAt` never verifies.
    package init(current: [UInt8], previous: [UInt8]? = nil, previousExpiresAt: Int64? = nil) {
        self.current = current
        self.previous = previous
        self.previousExpiresAt = previousExpiresAt
    }

    /// The keys valid at `now`: the current one, plus the previous one while `now < previousExpiresAt`.
    package func secrets(atMillis now: Int64) -> [[UInt8]] {
        // A previous key with no expiry is treated as expired: rotations must end.
        if let previous, let previousExpiresAt, now < previousExpiresAt {
            return [current, previous]
        }
        return [current]
    }
}
