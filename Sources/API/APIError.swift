import HTTP1
import Identity
import JSON

/// An error answer: status, stable code, message, optional details (API.md §2).
package struct APIError: Error, Sendable {
    package var status: HTTPStatus
    package var code: String
    package var message: String
    package var details: JSONObject?
    /// Extra response headers (`Allow`, `Retry-After`).
    package var headers: HTTPHeaders = HTTPHeaders()

    package init(_ status: HTTPStatus, code: String, message: String, details: JSONObject? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
    }

    package static func invalidRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_request", message: message)
    }
    package static let unauthorized = APIError(
        .unauthorized, code: "unauthorized", message: "Send a valid key as 'Authorization: Bearer <key>'.")
    package static let forbidden = APIError(
        .forbidden, code: "forbidden", message: "This key may not call this endpoint.")
    package static let notFound = APIError(.notFound, code: "not_found", message: "No such endpoint.")
    package static let internalError = APIError(
        .internalServerError, code: "internal_error",
        message: "Something went wrong on our side; the request id is in the logs.")

    /// The status each domain code answers with (API.md §2).
    package static func status(forDomainCode code: String) -> HTTPStatus {
        switch code {
        case "identity_verification_required", "invalid_identity_hash", "invalid_identity_token",
            "identity_token_expired", "unauthorized":
            .unauthorized
        case "forbidden": .forbidden
        case "not_found", "subscriber_not_found", "tenant_not_found": .notFound
        case "merge_source_identified": .conflict
        case "payload_too_large": .payloadTooLarge
        case "unavailable": .serviceUnavailable
        default: .badRequest
        }
    }

    /// Wraps a domain refusal.
    package init(_ error: IdentityError) {
        self.init(
            Self.status(forDomainCode: error.code), code: error.code, message: error.message, details: error.details)
    }
}
