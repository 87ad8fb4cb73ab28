import Crypto
import JSON
import StringBytes

/// A newly made key or secret, shown to its owner this once.
package struct IssuedKey: Sendable {
    package var record: APIKeyRecord
    /// The key itself; only its hash is stored.
    package var plaintext: String
}

/// A tenant as created: everything the creator sees once.
package struct CreatedTenant: Sendable {
    package var tenant: TenantRecord
    package var secretKey: IssuedKey
    package var clientKey: IssuedKey
    package var identitySecret: String
}

/// Workspaces, tenants, keys and identity secrets (API.md §1, §5, §9).
package enum Tenancy {
    /// How long the previous identity secret keeps verifying after a rotation.
    package static let rotationOverlapMillis: Int64 = 24 * 3600 * 1000
    /// Random characters after a key's prefix: 32 base62 characters are about 190 bits.
    package static let keyRandomLength = 32

    /// The stored form of a key: hex SHA-256. Keys are long and random, so no salt or stretching
    /// is needed, and the lookup stays one index probe.
    package static func hash(key: String) -> String {
        Hex.encode(Digest.sha256(Array(key.utf8)))
    }

    /// The kind a key claims by its prefix, before any lookup.
    package static func kind(ofKey key: String) -> KeyKind? {
        // Length first, then the prefix's bytes in place: every authenticated request comes
        // through here, and `hasPrefix` twice cost ~360 instructions.
        withUTF8Bytes(key) { bytes in
            KeyKind.allCases.first { kind in
                let prefix = kind.literalPrefix
                return bytes.count == prefix.utf8CodeUnitCount + keyRandomLength
                    && (0..<prefix.utf8CodeUnitCount).allSatisfy { bytes[$0] == prefix.utf8Start[$0] }
            }
        }
    }

    /// Makes sure a workspace owning `key` exists (for `BUZZKIT_BOOTSTRAP_WORKSPACE_KEY`). Idempotent.
    /// - Returns: the workspace id.
    package static func bootstrapWorkspace(key: String, in ctx: any IdentityWriteContext, now: Timestamp) throws
        -> String
    {
        guard kind(ofKey: key) == .workspace else {
            throw IdentityError.invalidRequest(
                "A workspace key is bk_ws_ followed by \(keyRandomLength) letters and digits.")
        }
        if let existing = try ctx.apiKey(hash: hash(key: key)) {
            guard existing.kind == .workspace, existing.revokedAt == nil else {
                throw IdentityError.invalidRequest("That key exists and is not an active workspace key.")
            }
            return existing.workspaceID
        }
        let workspaceID = try newWorkspace(name: "default", in: ctx, now: now)
        _ = try storeKey(key, kind: .workspace, workspaceID: workspaceID, tenantID: nil, in: ctx, now: now)
        return workspaceID
    }

    /// Creates a workspace and its first workspace key.
    package static func createWorkspace(name: String, in ctx: any IdentityWriteContext, now: Timestamp) throws
        -> IssuedKey
    {
        let workspaceID = try newWorkspace(name: name, in: ctx, now: now)
        return try issueKey(.workspace, workspaceID: workspaceID, tenantID: nil, in: ctx, now: now)
    }

    /// The workspace `buzzkit tenant create` puts a tenant in, offline: the bootstrap key's when
    /// one is configured, else the oldest, else a new one named "default".
    package static func workspaceForNewTenant(
        bootstrapKey: String?, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> String {
        if let bootstrapKey { return try bootstrapWorkspace(key: bootstrapKey, in: ctx, now: now) }
        if let first = try ctx.firstWorkspaceID() { return first }
        return try newWorkspace(name: "default", in: ctx, now: now)
    }

    private static func newWorkspace(name: String, in ctx: any IdentityWriteContext, now: Timestamp) throws -> String {
        let workspaceID = "ws_" + SecureRandom.token(length: 16)
        try ctx.insertWorkspace(id: workspaceID, name: name, now: now)
        return workspaceID
    }

    /// Creates a tenant with a secret key, a client key and an identity secret.
    package static func createTenant(
        name: String, workspaceID: String, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> CreatedTenant {
        let trimmed = name.trimmingSpaces
        guard !trimmed.isEmpty, trimmed.count <= 100 else {
            throw IdentityError.invalidRequest("'name' must be 1 to 100 characters.")
        }
        let secret = IdentityVerifier.generateSecret()
        let tenant = TenantRecord(
            id: "tn_" + SecureRandom.token(length: 16), workspaceID: workspaceID, name: trimmed,
            settings: TenantSettings(), secrets: IdentitySecretSet(current: Array(secret.utf8)), createdAt: now)
        try ctx.insertTenant(tenant)
        let secretKey = try issueKey(.secret, workspaceID: workspaceID, tenantID: tenant.id, in: ctx, now: now)
        let clientKey = try issueKey(.client, workspaceID: workspaceID, tenantID: tenant.id, in: ctx, now: now)
        return CreatedTenant(tenant: tenant, secretKey: secretKey, clientKey: clientKey, identitySecret: secret)
    }

    /// Makes a key and stores its hash.
    package static func issueKey(
        _ kind: KeyKind, workspaceID: String, tenantID: String?, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> IssuedKey {
        let plaintext = kind.prefix + SecureRandom.token(length: keyRandomLength)
        let record = try storeKey(
            plaintext, kind: kind, workspaceID: workspaceID, tenantID: tenantID, in: ctx, now: now)
        return IssuedKey(record: record, plaintext: plaintext)
    }

    /// Stores a key's hash with a record that shows only its prefix and 4 more characters.
    private static func storeKey(
        _ plaintext: String, kind: KeyKind, workspaceID: String, tenantID: String?, in ctx: any IdentityWriteContext,
        now: Timestamp
    ) throws -> APIKeyRecord {
        let record = APIKeyRecord(
            id: "key_" + SecureRandom.token(length: 16), kind: kind, workspaceID: workspaceID, tenantID: tenantID,
            displayPrefix: String(plaintext.prefix(kind.prefix.count + 4)), createdAt: now, revokedAt: nil)
        try ctx.insertAPIKey(record, hash: hash(key: plaintext))
        return record
    }

    /// A new identity secret. The one it replaces verifies for 24 more hours; any older one,
    /// still inside its own overlap, is retired at once.
    package static func rotateIdentitySecret(
        tenantID: String, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> (secret: String, previousExpiresAt: Timestamp) {
        guard let tenant = try ctx.tenant(id: tenantID) else { throw IdentityError.tenantNotFound }
        let secret = IdentityVerifier.generateSecret()
        let expires = Timestamp(millis: now.millis + rotationOverlapMillis)
        try ctx.updateTenant(
            tenant.with(
                secrets: IdentitySecretSet(
                    current: Array(secret.utf8), previous: tenant.secrets.current, previousExpiresAt: expires.millis)))
        try WebhookOutbox.record(
            .identitySecretRotated, ["previousExpiresAt": .string(expires.rfc3339)], tenantID: tenantID, in: ctx,
            now: now)
        return (secret, expires)
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    package var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
