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
        /// Set only when the key may act in it as it is: not revoked, and the tenant is the
        /// key's own, in the key's workspace (`ownTenant(of:_:)`). A hit with one is admitted
        /// without those checks again (`Authenticator.authenticate`).
        var ownTenant: TenantRecord?
        var expiresMillis: Int64
    }
    private struct State {
        var generation: UInt64 = 0
        var keys: [SentCredential: KeyEntry] = [:]
        /// The entry the last lookup found, with the value that found it. A connection sends the
        /// same key request after request, and comparing the value's bytes costs a third of
        /// hashing it and probing `keys` (~430 instructions, callgrind).
        var last: (sent: String, entry: KeyEntry)?
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

    /// What a lookup finds in one lock hold. An enum, so the records are bound out of it as
    /// they are handed over, not copied (each copy of a record is an atomic count).
    enum Lookup {
        /// A tenant key with its own tenant, checked against each other when stored.
        case admitted(APIKeyRecord, TenantRecord)
        /// A key without its tenant (a workspace key, or a tenant not cached), or nothing;
        /// with the generation to store what the database has under.
        case partial(APIKeyRecord?, generation: UInt64)
    }

    /// The cached key for the `Authorization` value `sent` and, for a tenant key, its tenant:
    /// one lock hold per request, on the calling thread's cache.
    func lookup(sent: String, nowMillis: Int64) -> Lookup {
        state.withLock { s in
            // Compared and read where it is kept: binding `s.last` or its entry to a constant
            // copied their references.
            if s.last == nil || !sameUTF8(s.last.unsafelyUnwrapped.sent, sent) {
                guard let stored = s.keys[SentCredential(sent)] else { return .partial(nil, generation: s.generation) }
                s.last = (sent, stored)
            }
            guard s.last.unsafelyUnwrapped.entry.expiresMillis > nowMillis else {
                return .partial(nil, generation: s.generation)
            }
            guard let tenant = s.last.unsafelyUnwrapped.entry.ownTenant else {
                return .partial(s.last.unsafelyUnwrapped.entry.key, generation: s.generation)
            }
            return .admitted(s.last.unsafelyUnwrapped.entry.key, tenant)
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
                s.last = nil
                s.tenants.removeAll(keepingCapacity: true)
            }
            let expiresMillis = nowMillis + ttlMillis
            if let key {
                let entry = KeyEntry(key: key, ownTenant: Self.ownTenant(of: key, tenant), expiresMillis: expiresMillis)
                s.keys[SentCredential(sent)] = entry
                s.last = (sent, entry)
            }
            if let tenant { s.tenants[tenant.id] = TenantEntry(tenant: tenant, expiresMillis: expiresMillis) }
        }
    }

    /// `tenant` if `key` may act in it as it is: a live client or secret key, and its own tenant
    /// in its own workspace. What `Authenticator.resolve` checks of a tenant key, checked once
    /// when stored. Records do not change; a revocation or a move comes with an `invalidate`.
    private static func ownTenant(of key: APIKeyRecord, _ tenant: TenantRecord?) -> TenantRecord? {
        guard let tenant, key.revokedAt == nil, let own = key.tenantID, sameUTF8(tenant.id, own),
            sameUTF8(tenant.workspaceID, key.workspaceID)
        else { return nil }
        if case .workspace = key.kind { return nil }
        return tenant
    }

    /// Empties every thread's cache. A lookup that began before it, on any thread, is not
    /// stored: its thread's generation moved.
    func invalidate() {
        state.forEach { s in
            s.generation &+= 1
            s.keys.removeAll()
            s.last = nil
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
        let cachedKey: APIKeyRecord?
        let generation: UInt64
        switch cache.lookup(sent: header, nowMillis: nowMillis) {
        case .admitted(let key, let tenant):
            // Both records cached: no token to cut out, no reader transaction, nothing to store,
            // and the key's checks against its tenant were made when they were stored.
            guard try Self.actsInTenant(key.kind, access: access) else {
                return Authentication(key: key, caller: nil)
            }
            return Self.authentication(key, in: tenant, sent: sent)
        case .partial(let key, let stored):
            (cachedKey, generation) = (key, stored)
        }
        guard let key = Self.bearerToken(header) else { throw APIError.unauthorized }
        // Refuse by prefix before touching the database: random strings cost no lookup.
        guard let claimed = Tenancy.kind(ofKey: key) else { throw APIError.unauthorized }
        var found: (key: APIKeyRecord?, tenant: TenantRecord?) = (nil, nil)
        defer {
            cache.store(
                key: found.key.flatMap { $0.kind == claimed ? $0 : nil }, sent: header, tenant: found.tenant,
                generation: generation, nowMillis: nowMillis)
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
        guard try Self.actsInTenant(record.kind, access: access) else {
            return Authentication(key: record, caller: nil)
        }
        let tenantID: String
        if case .workspace = record.kind {
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
        return Self.authentication(record, in: tenant, sent: sent)
    }

    /// Whether a key of this kind acts in a tenant on a route of this access: false where it
    /// acts in none (open routes; a workspace key creating tenants), `forbidden` where it may not
    /// call the route at all. Matched, not compared: `==` on these enums went through their
    /// `Equatable` witness tables from this module.
    private static func actsInTenant(_ kind: KeyKind, access: RouteAccess) throws -> Bool {
        switch (access, kind) {
        case (.open, _), (.workspace, .workspace):
            return false
        case (.workspace, _), (.backend, .client):
            throw APIError.forbidden
        case (.app, _), (.backend, _):
            return true
        }
    }

    /// The caller a key that passed the checks is, in `tenant`, with the proof the request sent.
    /// The records are taken, not borrowed: the answer keeps them, and a borrowed one was
    /// retained again to be kept.
    private static func authentication(
        _ record: consuming APIKeyRecord, in tenant: consuming TenantRecord, sent: borrowing AuthFields
    ) -> Authentication {
        var proof: IdentityProof?
        if let token = sent.identityToken {
            proof = .token(token)
        } else if let hash = sent.identityHash {
            proof = .hash(hash)
        }
        let role: Caller.Role
        if case .client = record.kind { role = .app } else { role = .backend }
        return Authentication(key: record, caller: Caller(tenant: tenant, role: role, proof: proof))
    }
}

/// The request fields authentication reads, found in one pass over the headers (four lookups
/// by name walked them four times). Kept as the fields' places, not their values: copying four
/// optional strings in and out of it was ~400 instructions of an authenticated request
/// (callgrind); the array is one reference.
struct AuthFields {
    private let fields: [HTTPField]
    private var authorizationAt = -1
    private var tenantAt = -1
    private var identityTokenAt = -1
    private var identityHashAt = -1

    init(_ headers: HTTPHeaders) {
        // The first of each, as `headers[name]` answers. By index, not `for (name, value) in`:
        // binding each field retained and released its two strings (callgrind).
        fields = headers.fields
        for i in fields.indices {
            switch fields[i].name.utf8.count {
            case 13 where authorizationAt < 0 && HTTPHeaders.namesEqual(fields[i].name, "Authorization"):
                authorizationAt = i
            case 14 where tenantAt < 0 && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Tenant"):
                tenantAt = i
            case 22 where identityTokenAt < 0 && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Identity-Token"):
                identityTokenAt = i
            case 21 where identityHashAt < 0 && HTTPHeaders.namesEqual(fields[i].name, "BuzzKit-Identity-Hash"):
                identityHashAt = i
            default:
                break
            }
        }
    }

    var authorization: String? { value(at: authorizationAt) }
    var tenant: String? { value(at: tenantAt) }
    var identityToken: String? { value(at: identityTokenAt) }
    var identityHash: String? { value(at: identityHashAt) }

    private func value(at index: Int) -> String? { index < 0 ? nil : fields[index].value }
}

/// An `Authorization` value as the auth cache's key: hashed by its last eight bytes only, the
/// tail of the token's random part, which spreads keys as well as the whole value would for a
/// fraction of the hashing (SipHash of ~45 bytes was ~400 instructions a request). Equality is
/// the whole value's.
struct SentCredential: Hashable {
    let value: String

    init(_ value: String) { self.value = value }

    static func == (a: SentCredential, b: SentCredential) -> Bool { sameUTF8(a.value, b.value) }

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
