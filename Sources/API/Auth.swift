import HTTP1
import Identity
import StringBytes
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

/// Recently used key and tenant records, so authenticating a request does not cost a reader
/// transaction and two SQL lookups every time (the profile of GET /v1/subscribers/{id} showed
/// about a third of the loop threads' time there).
///
/// Entries live `ttlMillis` (1 s). The store announces every committed change to tenants, keys
/// and workspaces (`AuthenticationChangeSource`): one made through this server before its
/// request is answered, so it applies at once; one made by another server on the same
/// PostgreSQL database within the second. Either calls `invalidate()`; a lookup that raced with
/// it is not stored (the generation moved). Only found records are cached: a key created by the
/// CLI works on its first request.
///
/// Keys are looked up by the `Authorization` value as sent, not by the token's SHA-256: the hash
/// cost ~9k instructions a request (callgrind, identify-link), paid again on every hit; and not by
/// the token cut out of it, which cost a String per request. The tokens are in this process's
/// memory anyway while their requests are read. Only the value's last eight bytes are hashed
/// (`SentCredential`); the dictionary's hash is seeded per process, and only values that
/// authenticated are stored, so which entries share a bucket cannot be steered from outside.
final class AuthCache: Sendable {
    private struct TenantEntry {
        var tenant: TenantRecord
        var expiresMillis: Int64
    }
    /// A key with its own tenant (a client or secret key's), so a request finds both in one
    /// dictionary lookup: a second lookup by tenant id cost ~500 instructions per request.
    private struct KeyEntry {
        var key: APIKeyRecord
        var ownTenant: TenantRecord?
        var expiresMillis: Int64
    }
    private struct State {
        var generation: UInt64 = 0
        var keys: [SentCredential: KeyEntry] = [:]
        /// Tenants by id, for workspace keys (which name their tenant per request).
        var tenants: [String: TenantEntry] = [:]
    }
    /// One cache per thread, each with its own records (`PerThread`): with one shared cache each
    /// request took the same lock, and counted references to the same key and tenant objects,
    /// as the other loop's. A record is then read from the database once per thread that needs it.
    private let state = PerThread { State() }
    let ttlMillis: Int64
    /// Bounded, per thread, so a flood of distinct valid keys cannot grow it without limit.
    private let maxEntries = 10_000

    init(ttlMillis: Int64 = 1000) { self.ttlMillis = ttlMillis }

    /// What a lookup finds in one lock hold: the key by its token, its own tenant (nil for a
    /// workspace key or when not cached), and the generation to store a database lookup under.
    struct Lookup {
        var key: APIKeyRecord?
        var tenant: TenantRecord?
        var generation: UInt64
    }

    /// The cached key for the `Authorization` value `sent` and, for a tenant key, its tenant:
    /// one lock hold per request, on the calling thread's cache.
    func lookup(sent: String, nowMillis: Int64) -> Lookup {
        state.withLock { s in
            var found = Lookup(generation: s.generation)
            guard let entry = s.keys[SentCredential(sent)], entry.expiresMillis > nowMillis else { return found }
            found.key = entry.key
            found.tenant = entry.ownTenant
            return found
        }
    }

    func tenant(_ id: String, nowMillis: Int64) -> TenantRecord? {
        state.withLock { s in s.tenants[id].flatMap { $0.expiresMillis > nowMillis ? $0.tenant : nil } }
    }

    /// Stores what a lookup that began at `generation` found, unless an invalidation came since.
    /// A key is stored only if it is of the kind its token's prefix claims, so a hit, found by the
    /// very value sent, needs no token cut out to check that again.
    func store(key: APIKeyRecord?, sent: String, tenant: TenantRecord?, generation: UInt64, nowMillis: Int64) {
        state.withLock { s in
            guard s.generation == generation else { return }
            if s.keys.count + s.tenants.count >= maxEntries {
                s.keys.removeAll(keepingCapacity: true)
                s.tenants.removeAll(keepingCapacity: true)
            }
            let expiresMillis = nowMillis + ttlMillis
            if let key {
                let own = key.kind == .workspace || tenant?.id != key.tenantID ? nil : tenant
                s.keys[SentCredential(sent)] = KeyEntry(key: key, ownTenant: own, expiresMillis: expiresMillis)
            }
            if let tenant { s.tenants[tenant.id] = TenantEntry(tenant: tenant, expiresMillis: expiresMillis) }
        }
    }

    /// Empties every thread's cache. A lookup that began before it, on any thread, is not
    /// stored: its thread's generation moved.
    func invalidate() {
        state.forEach { s in
            s.generation &+= 1
            s.keys.removeAll()
            s.tenants.removeAll()
        }
    }
}

/// Turns `Authorization: Bearer …` into a caller, scoped to exactly one tenant.
struct Authenticator: Sendable {
    let store: any IdentityStore
    var cache = AuthCache()

    func authenticate(_ headers: HTTPHeaders, access: RouteAccess, now: Timestamp) throws -> Authentication {
        let sent = AuthFields(headers)
        guard let header = sent.authorization else { throw APIError.unauthorized }
        let nowMillis = now.millis
        let cached = cache.lookup(sent: header, nowMillis: nowMillis)
        // Both records cached: no token to cut out, no reader transaction, nothing to store.
        if let cachedKey = cached.key, cachedKey.kind != .workspace, let cachedTenant = cached.tenant {
            return try resolve(cachedKey, claimed: cachedKey.kind, access: access, sent: sent) { _ in cachedTenant }
        }
        guard let key = Self.bearerToken(header) else { throw APIError.unauthorized }
        // Refuse by prefix before touching the database: random strings cost no lookup.
        guard let claimed = Tenancy.kind(ofKey: key) else { throw APIError.unauthorized }
        let cachedKey = cached.key
        var found: (key: APIKeyRecord?, tenant: TenantRecord?) = (nil, nil)
        defer {
            cache.store(
                key: found.key.flatMap { $0.kind == claimed ? $0 : nil }, sent: header, tenant: found.tenant,
                generation: cached.generation, nowMillis: nowMillis)
        }
        return try store.read { ctx in
            guard let record = try cachedKey ?? ctx.apiKey(hash: Tenancy.hash(key: key)) else {
                throw APIError.unauthorized
            }
            found.key = record
            return try resolve(record, claimed: claimed, access: access, sent: sent) { id in
                let tenant = try cache.tenant(id, nowMillis: nowMillis) ?? ctx.tenant(id: id)
                found.tenant = tenant
                return tenant
            }
        }
    }

    /// The credential of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1), without
    /// the spaces and tabs around it; nil for another scheme or an empty token. Read as bytes:
    /// every authenticated request comes through here.
    static func bearerToken(_ header: String) -> String? {
        withUTF8Bytes(header) { bytes -> String? in
            let scheme: StaticString = "bearer "
            guard bytes.count > scheme.utf8CodeUnitCount else { return nil }
            for i in 0..<scheme.utf8CodeUnitCount where bytes[i] | 0x20 != scheme.utf8Start[i] { return nil }
            var start = scheme.utf8CodeUnitCount
            var end = bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            guard start < end else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// The rules of §1 on a key record, with the tenant looked up by `tenantNamed`.
    private func resolve(
        _ record: APIKeyRecord, claimed: KeyKind, access: RouteAccess, sent: AuthFields,
        tenantNamed: (String) throws -> TenantRecord?
    ) throws -> Authentication {
        guard record.kind == claimed, record.revokedAt == nil else {
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
            guard let named = sent.tenant, !named.isEmpty else {
                throw APIError(
                    .tenantRequired,
                    message: "A workspace key names its tenant in the BuzzKit-Tenant header.")
            }
            tenantID = named
        } else {
            guard let own = record.tenantID else { throw APIError.unauthorized }
            tenantID = own
        }
        guard let tenant = try tenantNamed(tenantID), tenant.workspaceID == record.workspaceID else {
            throw APIError(IdentityError.tenantNotFound)
        }
        var proof: IdentityProof?
        if let token = sent.identityToken {
            proof = .token(token)
        } else if let hash = sent.identityHash {
            proof = .hash(hash)
        }
        let role: Caller.Role = record.kind == .client ? .app : .backend
        return Authentication(key: record, caller: Caller(tenant: tenant, role: role, proof: proof))
    }
}

/// The request fields authentication reads, found in one pass over the headers (four lookups
/// by name walked them four times).
struct AuthFields {
    var authorization: String?
    var tenant: String?
    var identityToken: String?
    var identityHash: String?

    init(_ headers: HTTPHeaders) {
        // The first of each, as `headers[name]` answers. By index, not `for (name, value) in`:
        // binding each field retained and released its two strings (callgrind).
        let fields = headers.fields
        for i in fields.indices {
            switch fields[i].name.utf8.count {
            case 13 where authorization == nil && HTTPHeaders.namesEqual(fields[i].name, "Authorization"):
                authorization = fields[i].value
            case 14 where tenant == nil && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Tenant"):
                tenant = fields[i].value
            case 22 where identityToken == nil && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Identity-Token"):
                identityToken = fields[i].value
            case 21 where identityHash == nil && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Identity-Hash"):
                identityHash = fields[i].value
            default:
                break
            }
        }
    }
}

/// An `Authorization` value as the auth cache's key: hashed by its last eight bytes only, the
/// tail of the token's random part, which spreads keys as well as the whole value would for a
/// fraction of the hashing (SipHash of ~45 bytes was ~400 instructions a request). Equality is
/// the whole value's.
struct SentCredential: Hashable {
    let value: String

    init(_ value: String) { self.value = value }

    static func == (a: SentCredential, b: SentCredential) -> Bool { a.value == b.value }

    func hash(into hasher: inout Hasher) { hasher.combineTail(of: value) }
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
