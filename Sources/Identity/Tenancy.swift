import JSON

/// Per-tenant attribute limits (API.md §7); defaults are the documented ones.
package struct AttributeLimits: Sendable, Equatable {
    package var maxKeys = 100
    package var maxKeyLength = 128
    package var maxValueBytes = 1024
    package init() {}
}

/// Everything `PATCH /v1/tenant` can change (API.md §5).
package struct TenantSettings: Sendable, Equatable {
    package var requireVerification = false
    package var allowAnonymous = true
    package var emailProviderConnected = false
    package var protectedAttributes: [String] = []
    package var blockedExternalIds: [String] = []
    package var attributeLimits = AttributeLimits()
    /// Most ids (current one and aliases) one subscriber may have; a merge past it does not
    /// happen (API.md §6), so a hostile app cannot grow one person without bound.
    package var maxAliases = 1000
    package init() {}

    /// The settings whose default is the open one: losing one of them to a bad row would quietly
    /// relax what the tenant closed, so a stored value that does not read is an error.
    package static let securitySettings: Set<String> = [
        "requireVerification", "allowAnonymous", "protectedAttributes", "blockedExternalIds",
    ]
    /// Bounds of `maxAliases`: 1 leaves only the subscriber's own id.
    package static let maxAliasesRange = 1...100_000

    /// The settings as stored and as answered.
    package var json: JSONObject {
        [
            "requireVerification": .bool(requireVerification),
            "allowAnonymous": .bool(allowAnonymous),
            "emailProviderConnected": .bool(emailProviderConnected),
            "protectedAttributes": .array(protectedAttributes.map { .string($0) }),
            "blockedExternalIds": .array(blockedExternalIds.map { .string($0) }),
            "attributeLimits": .object([
                "maxKeys": .number(String(attributeLimits.maxKeys)),
                "maxKeyLength": .number(String(attributeLimits.maxKeyLength)),
                "maxValueBytes": .number(String(attributeLimits.maxValueBytes)),
            ]),
            "maxAliases": .number(String(maxAliases)),
        ]
    }

    /// Applies a partial update; unknown fields and wrong types are refused, so a typo never
    /// silently does nothing.
    package func applying(_ patch: JSONObject) throws(IdentityError) -> TenantSettings {
        var next = self
        for (key, value) in patch {
            switch key {
            case "requireVerification": next.requireVerification = try Self.bool(value, key)
            case "allowAnonymous": next.allowAnonymous = try Self.bool(value, key)
            case "emailProviderConnected": next.emailProviderConnected = try Self.bool(value, key)
            case "protectedAttributes": next.protectedAttributes = try Self.strings(value, key)
            case "blockedExternalIds": next.blockedExternalIds = try Self.strings(value, key)
            case "attributeLimits":
                guard let limits = value.objectValue else { throw Self.wrongType(key, "an object") }
                for (name, limit) in limits {
                    guard let n = limit.intValue, n >= 1, n <= 1_000_000 else {
                        throw Self.wrongType("attributeLimits.\(name)", "an integer from 1 to 1000000")
                    }
                    switch name {
                    case "maxKeys": next.attributeLimits.maxKeys = Int(n)
                    case "maxKeyLength": next.attributeLimits.maxKeyLength = Int(n)
                    case "maxValueBytes": next.attributeLimits.maxValueBytes = Int(n)
                    default: throw .invalidRequest("Unknown field attributeLimits.\(name).")
                    }
                }
            case "maxAliases":
                guard let n = value.intValue, Self.maxAliasesRange.contains(Int(n)) else {
                    throw Self.wrongType(
                        key,
                        "an integer from \(Self.maxAliasesRange.lowerBound) to \(Self.maxAliasesRange.upperBound)")
                }
                next.maxAliases = Int(n)
            default:
                throw .invalidRequest("Unknown tenant setting '\(key)'.")
            }
        }
        return next
    }

    /// What a stored settings row held that could not be used.
    package struct DecodingError: Error, Sendable, CustomStringConvertible {
        /// The setting that did not read.
        package var field: String
        package var reason: String
        package var description: String { "tenant setting '\(field)': \(reason)" }
    }

    /// Reads a stored settings row field by field: a missing field keeps its default (an older
    /// row, a newer binary); every field that reads is kept; a field that is unknown (a newer
    /// binary wrote it) or does not read is skipped and returned in `skipped`, to be logged. A
    /// security setting that does not read throws: defaulting `requireVerification` to false
    /// would turn verification off without anyone asking.
    package static func decode(_ json: JSONObject) throws(DecodingError) -> (
        settings: TenantSettings, skipped: [DecodingError]
    ) {
        var settings = TenantSettings()
        var skipped: [DecodingError] = []
        // The limits are read one by one too: a bad maxKeys must not cost maxValueBytes.
        var fields: [(String, JSONObject)] = []
        for (key, value) in json {
            if key == "attributeLimits", let limits = value.objectValue {
                for (name, limit) in limits {
                    fields.append(("attributeLimits.\(name)", [key: .object([name: limit])]))
                }
            } else {
                fields.append((key, [key: value]))
            }
        }
        for (key, field) in fields {
            do {
                settings = try settings.applying(field)
            } catch {
                let problem = DecodingError(field: key, reason: error.message)
                if securitySettings.contains(key) { throw problem }
                skipped.append(problem)
            }
        }
        return (settings, skipped)
    }

    private static func bool(_ value: JSONValue, _ key: String) throws(IdentityError) -> Bool {
        guard let b = value.boolValue else { throw wrongType(key, "a boolean") }
        return b
    }

    private static func strings(_ value: JSONValue, _ key: String) throws(IdentityError) -> [String] {
        guard let items = value.arrayValue, items.count <= 1000 else {
            throw wrongType(key, "an array of at most 1000 strings")
        }
        var result: [String] = []
        for item in items {
            guard let s = item.stringValue, !s.isEmpty, s.utf8.count <= 255 else {
                throw wrongType(key, "an array of non-empty strings")
            }
            result.append(s)
        }
        return result
    }

    private static func wrongType(_ key: String, _ expected: String) -> IdentityError {
        .invalidRequest("'\(key)' must be \(expected).")
    }
}

/// A tenant as the domain needs it on every call: id, settings and its identity secrets.
///
/// An immutable object: a record rides in every request's `Caller` and in the auth cache and is
/// copied several times per request, and a copy of a struct with these fields retained each
/// string and array in them (~330 instructions a copy). A change makes a new record (`with`).
package final class TenantRecord: Sendable {
    package let id: String
    package let workspaceID: String
    package let name: String
    package let settings: TenantSettings
    package let secrets: IdentitySecretSet
    package let createdAt: Timestamp

    package init(
        id: String, workspaceID: String, name: String, settings: TenantSettings,
        secrets: IdentitySecretSet, createdAt: Timestamp
    ) {
        self.id = id
        self.workspaceID = workspaceID
        self.name = name
        self.settings = settings
        self.secrets = secrets
        self.createdAt = createdAt
    }

    /// This tenant with other settings and/or secrets.
    package func with(settings: TenantSettings? = nil, secrets: IdentitySecretSet? = nil) -> TenantRecord {
        TenantRecord(
            id: id, workspaceID: workspaceID, name: name, settings: settings ?? self.settings,
            secrets: secrets ?? self.secrets, createdAt: createdAt)
    }
}

/// The three kinds of API key (API.md §1).
package enum KeyKind: String, Sendable, CaseIterable {
    case client
    case secret
    case workspace

    /// The recognisable prefix a key of this kind starts with.
    package var prefix: String { literalPrefix.description }

    /// `prefix` as a literal, to compare a key's bytes with in place.
    package var literalPrefix: StaticString {
        switch self {
        case .client: "bk_client_"
        case .secret: "bk_secret_"
        case .workspace: "bk_ws_"
        }
    }
}

/// A stored key: never the key itself, only its SHA-256. An immutable object, as
/// `TenantRecord` is and for the same reason: copied into every request.
package final class APIKeyRecord: Sendable {
    package let id: String
    package let kind: KeyKind
    package let workspaceID: String
    /// Nil for workspace keys.
    package let tenantID: String?
    /// The first characters of the key, to tell keys apart in a listing.
    package let displayPrefix: String
    package let createdAt: Timestamp
    package let revokedAt: Timestamp?

    package init(
        id: String, kind: KeyKind, workspaceID: String, tenantID: String?, displayPrefix: String,
        createdAt: Timestamp, revokedAt: Timestamp?
    ) {
        self.id = id
        self.kind = kind
        self.workspaceID = workspaceID
        self.tenantID = tenantID
        self.displayPrefix = displayPrefix
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Who is calling, decided once per request from the key: the domain takes it as an input to
/// every operation and scopes every query by `tenant.id`.
package struct Caller: Sendable {
    package enum Role: Sendable, Equatable {
        /// A client key: public, acts only on its own subscriber, proofs may be required.
        case app
        /// A secret or workspace key: trusted, no proof needed.
        case backend
    }
    package var tenant: TenantRecord
    package var role: Role
    /// A proof from `BuzzKit-Identity-Hash` / `BuzzKit-Identity-Token`, for app calls.
    package var proof: IdentityProof?
    /// Told when an app call acts on an external id without a valid proof (allowed or not), for
    /// the tenant's `unverifiedAppCalls24h`.
    package var onUnproven: (@Sendable () -> Void)?

    package init(tenant: TenantRecord, role: Role, proof: IdentityProof? = nil) {
        self.tenant = tenant
        self.role = role
        self.proof = proof
    }
}
