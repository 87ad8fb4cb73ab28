import HTTP1
import Identity
import JSON

/// An error answer: status, stable code, message, optional details (API.md §2).
package struct APIError: Error, Sendable {
    /// A code only the API layer refuses with, with its status beside it, each declared once;
    /// codes the domain also uses (`invalid_request`, `forbidden`, `unavailable`…) are
    /// `IdentityError.Code`'s, and `init(_:message:details:)` takes either.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package let status: HTTPStatus
        private init(_ rawValue: String, _ status: HTTPStatus) {
            self.rawValue = rawValue
            self.status = status
        }

        package static let invalidJSON = Code("invalid_json", .badRequest)
        package static let tenantRequired = Code("tenant_required", .badRequest)
        package static let unauthorized = Code("unauthorized", .unauthorized)
        package static let notFound = Code("not_found", .notFound)
        package static let methodNotAllowed = Code("method_not_allowed", .methodNotAllowed)
        package static let unsupportedMediaType = Code("unsupported_media_type", .unsupportedMediaType)
        package static let rateLimited = Code("rate_limited", .tooManyRequests)
        package static let internalError = Code("internal_error", .internalServerError)
        package static let idempotencyKeyInProgress = Code("idempotency_key_in_progress", .conflict)
        package static let idempotencyKeyReused = Code("idempotency_key_reused", .unprocessableContent)

        package var description: String { rawValue }
    }

    package var status: HTTPStatus
    package var code: String
    package var message: String
    package var details: JSONObject?
    /// Extra response headers (`Allow`, `Retry-After`).
    package var headers: HTTPHeaders = HTTPHeaders()

    /// An error of the API layer: the status comes with the code.
    package init(_ code: Code, message: String, details: JSONObject? = nil) {
        self.init(code.status, code: code.rawValue, message: message, details: details)
    }

    /// An error with one of the domain's codes (`invalid_request`, `forbidden`, `unavailable`).
    package init(_ code: IdentityError.Code, message: String, details: JSONObject? = nil) {
        self.init(HTTPStatus(code.status), code: code.rawValue, message: message, details: details)
    }

    /// Any status and code: for what the HTTP layer already decided (a protocol error).
    package init(_ status: HTTPStatus, code: String, message: String, details: JSONObject? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
    }

    package static func invalidRequest(_ message: String) -> APIError {
        APIError(.invalidRequest, message: message)
    }
    package static let unauthorized = APIError(
        .unauthorized, message: "Send a valid key as 'Authorization: Bearer <key>'.")
    package static let forbidden = APIError(.forbidden, message: "This key may not call this endpoint.")
    package static let notFound = APIError(.notFound, message: "No such endpoint.")
    package static let internalError = APIError(
        .internalError, message: "Something went wrong on our side; the request id is in the logs.")

    /// Wraps a domain refusal; its code carries its status.
    package init(_ error: IdentityError) {
        self.init(error.code, message: error.message, details: error.details)
    }
}
