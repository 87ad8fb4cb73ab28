import JSON

/// A refusal from the domain: a stable snake_case code (API.md §2) and a message for people.
package struct IdentityError: Error, Sendable, CustomStringConvertible {
    /// A stable code and the HTTP status API.md §2 gives it: each declared once, below, so no
    /// caller compares code strings and no table elsewhere can drift from this one.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The snake_case code of the envelope's `error.code`.
        package let rawValue: String
        /// The status number of API.md §2; the API layer turns it into its HTTP type (the domain
        /// imports nothing of HTTP).
        package let status: Int

        private init(_ rawValue: String, _ status: Int) {
            self.rawValue = rawValue
            self.status = status
        }

        package static let invalidRequest = Code("invalid_request", 400)
        package static let invalidExternalID = Code("invalid_external_id", 400)
        package static let invalidAnonymousID = Code("invalid_anonymous_id", 400)
        package static let invalidAttributes = Code("invalid_attributes", 400)
        package static let invalidEmail = Code("invalid_email", 400)
        package static let invalidEvent = Code("invalid_event", 400)
        package static let batchTooLarge = Code("batch_too_large", 400)
        package static let identityVerificationRequired = Code("identity_verification_required", 401)
        package static let invalidIdentityHash = Code("invalid_identity_hash", 401)
        package static let invalidIdentityToken = Code("invalid_identity_token", 401)
        package static let identityTokenExpired = Code("identity_token_expired", 401)
        package static let forbidden = Code("forbidden", 403)
        package static let subscriberNotFound = Code("subscriber_not_found", 404)
        package static let tenantNotFound = Code("tenant_not_found", 404)
        package static let mergeSourceIdentified = Code("merge_source_identified", 409)
        package static let aliasLimitReached = Code("alias_limit_reached", 409)
        /// The store cannot serve now (disk full, read-only, locked): an operator can fix it.
        package static let unavailable = Code("unavailable", 503)

        package var description: String { rawValue }
    }

    package var code: Code
    package var message: String
    package var details: JSONObject?

    package init(code: Code, message: String, details: JSONObject? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    package var description: String { "\(code): \(message)" }

    package static func invalidRequest(_ message: String) -> IdentityError {
        IdentityError(code: .invalidRequest, message: message)
    }
    package static func invalidExternalID(_ message: String) -> IdentityError {
        IdentityError(code: .invalidExternalID, message: message)
    }
    package static func invalidAnonymousID(_ message: String) -> IdentityError {
        IdentityError(code: .invalidAnonymousID, message: message)
    }
    package static let subscriberNotFound = IdentityError(
        code: .subscriberNotFound, message: "No subscriber has this id or alias.")
    package static let tenantNotFound = IdentityError(
        code: .tenantNotFound, message: "No such tenant for this key.")
    package static let verificationRequired = IdentityError(
        code: .identityVerificationRequired,
        message: "This call needs a valid identity hash or token for the subscriber.")
    package static let forbidden = IdentityError(
        code: .forbidden, message: "This key may not call this endpoint.")
}

/// A note that does not fail the call; rendered in `metadata.warnings`.
package struct IdentityWarning: Sendable, Equatable {
    /// The stable code of a warning, each declared once.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The app tried to change or remove an attribute that is the backend's (API.md §7).
        package static let attributeProtected = Code("attribute_protected")
        /// The same code as the refusal the backend merge route answers with.
        package static let mergeSourceIdentified = Code(IdentityError.Code.mergeSourceIdentified.rawValue)
        package static let aliasLimitReached = Code(IdentityError.Code.aliasLimitReached.rawValue)

        package var description: String { rawValue }
    }

    package var code: Code
    package var message: String
    package init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

/// Why a merge of API.md §6 did not happen, when it is not simply a retry: identify reports it as
/// a warning and still succeeds; the backend merge route answers it as an error.
package enum MergeRefusal: Sendable, Equatable {
    /// The anonymous id belongs to an identified subscriber or to another person.
    case sourceIdentified(anonymousID: String)
    /// The merge would give the person more than the tenant's `maxAliases` ids.
    case aliasLimitReached(anonymousID: String, limit: Int)

    package var error: IdentityError {
        switch self {
        case .sourceIdentified(let id):
            IdentityError(
                code: .mergeSourceIdentified,
                message: "\(id) already belongs to an identified subscriber; nothing was merged.")
        case .aliasLimitReached(let id, let limit):
            IdentityError(
                code: .aliasLimitReached,
                message: "Merging \(id) would give this subscriber more than \(limit) ids; nothing was merged.")
        }
    }

    package var warning: IdentityWarning {
        let error = error
        switch self {
        case .sourceIdentified: return IdentityWarning(code: .mergeSourceIdentified, message: error.message)
        case .aliasLimitReached: return IdentityWarning(code: .aliasLimitReached, message: error.message)
        }
    }
}
