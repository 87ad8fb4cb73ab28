import HTTP1
import Identity
import Synchronization

/// Which keys a route accepts (API.md §1).
package enum RouteAccess: Sendable {
    /// No key: health, readiness, the OpenAPI document, metrics.
    case open
    /// App routes: a client key, or any backend key.
    case app
    /// Backend routes: a secret key, or a workspace key with `BuzzKit-Tenant`.
    case backend
    /// Workspace keys only, no tenant (creating tenants).
    case workspace
}

/// What a key resolved to.
package struct Authentication: Sendable {
    package var key: APIKeyRecord
    /// The tenant the call acts in; nil only on workspace routes.
    package var caller: Caller?
}

/// Turns `Authorization: Bearer …` into a caller, scoped to exactly one tenant.
struct Authenticator: Sendable {
    let store: any IdentityStore

    func authenticate(_ headers: HTTPHeaders, access: RouteAccess, now: Timestamp) throws -> Authentication {
        guard let header = headers["Authorization"],
            header.count > 7, header.prefix(7).lowercased() == "bearer "
        else { throw APIError.unauthorized }
        let key = String(header.dropFirst(7)).trimmingSpaces
        // Refuse by prefix before touching the database: random strings cost no lookup.
        guard let claimed = Tenancy.kind(ofKey: key) else { throw APIError.unauthorized }
        let hash = Tenancy.hash(key: key)
        let tenantHeader = headers["BuzzKit-Tenant"]

        return try store.read { ctx in
            guard let record = try ctx.apiKey(hash: hash), record.kind == claimed, record.revokedAt == nil else {
                throw APIError.unauthorized
            }
            switch (access, record.kind) {
            case (.open, _):
                return Authentication(key: record, caller: nil)
            case (.workspace, .workspace):
                return Authentication(key: record, caller: nil)
            case (.workspace, _), (.backend, .client):
                throw APIError.forbidden
            case (.app, _), (.backend, _):
                break
            }
            let tenantID: String
            if record.kind == .workspace {
                guard let named = tenantHeader, !named.isEmpty else {
                    throw APIError(
                        .badRequest, code: "tenant_required",
                        message: "A workspace key names its tenant in the BuzzKit-Tenant header.")
                }
                tenantID = named
            } else {
                guard let own = record.tenantID else { throw APIError.unauthorized }
                tenantID = own
            }
            guard let tenant = try ctx.tenant(id: tenantID), tenant.workspaceID == record.workspaceID else {
                throw APIError(IdentityError.tenantNotFound)
            }
            var proof: IdentityProof?
            if let token = headers["BuzzKit-Identity-Token"] {
                proof = .token(token)
            } else if let hash = headers["BuzzKit-Identity-Hash"] {
                proof = .hash(hash)
            }
            let role: Caller.Role = record.kind == .client ? .app : .backend
            return Authentication(key: record, caller: Caller(tenant: tenant, role: role, proof: proof))
        }
    }
}

/// A token bucket per client key: the app's key is public, so one leaked key must not be able
/// to flood the server. Backend keys are not limited.
final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updatedMillis: Int64
    }
    let ratePerSecond: Double
    let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = ratePerSecond
        self.burst = burst
    }

    /// Takes a token for `key`. Returns nil when allowed, or the seconds to wait.
    func take(_ key: String, nowMillis: Int64) -> Int? {
        guard ratePerSecond > 0 else { return nil }
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updatedMillis: nowMillis)
            let elapsed = Double(max(0, nowMillis - bucket.updatedMillis)) / 1000
            bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
            bucket.updatedMillis = nowMillis
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / ratePerSecond).rounded(.up)))
        }
    }
}
