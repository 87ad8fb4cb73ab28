import JSON

/// A refusal from the domain: a stable snake_case `code` (API.md §2) and a message for people.
/// The API layer maps the code to an HTTP status; the domain knows nothing of HTTP.
package struct IdentityError: Error, Sendable, CustomStringConvertible {
    package var code: String
    package var message: String
    package var details: JSONObject?

    package init(code: String, message: String, details: JSONObject? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    package var description: String { "\(code): \(message)" }

    package static func invalidRequest(_ message: String) -> IdentityError {
        IdentityError(code: "invalid_request", message: message)
    }
    package static func invalidExternalID(_ message: String) -> IdentityError {
        IdentityError(code: "invalid_external_id", message: message)
    }
    package static func invalidAnonymousID(_ message: String) -> IdentityError {
        IdentityError(code: "invalid_anonymous_id", message: message)
    }
    package static let subscriberNotFound = IdentityError(
        code: "subscriber_not_found", message: "No subscriber has this id or alias.")
    package static let tenantNotFound = IdentityError(
        code: "tenant_not_found", message: "No such tenant for this key.")
    package static let verificationRequired = IdentityError(
        code: "identity_verification_required",
        message: "This call needs a valid identity hash or token for the subscriber.")
    package static let forbidden = IdentityError(
        code: "forbidden", message: "This key may not call this endpoint.")
}

/// A note that does not fail the call; rendered in `metadata.warnings`.
package struct IdentityWarning: Sendable, Equatable {
    package var code: String
    package var message: String
    package init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}
