import Foundation
import HTTP1
import Identity
import TestSupport
import Testing

@testable import API

/// API.md §2: each code is declared once, with its status beside it, and nothing decides by
/// comparing code strings.
@Suite struct ErrorCodeTests {
    @Test func everyCodeIsWrittenOnce() throws {
        let codes = [
            "invalid_json", "invalid_request", "invalid_external_id", "invalid_anonymous_id", "invalid_attributes",
            "invalid_email", "invalid_event", "batch_too_large", "tenant_required", "unauthorized",
            "identity_verification_required", "invalid_identity_hash", "invalid_identity_token",
            "identity_token_expired", "forbidden", "not_found", "subscriber_not_found", "tenant_not_found",
            "method_not_allowed", "merge_source_identified", "alias_limit_reached", "rate_limited",
            "internal_error", "unavailable", "attribute_protected", "idempotency_key_in_progress",
            "idempotency_key_reused",
        ]
        // The domain's and the API layer's sources (the HTTP layers own their protocol codes).
        let files = try swiftSources(ofModules: ["Identity", "API", "Storage", "CLI"])
        #expect(files.count > 20)
        for code in codes {
            let places = files.filter { $0.text.contains("\"\(code)\"") }.map(\.file)
            #expect(places.count == 1, "\(code) is spelled in \(places)")
        }
    }

    @Test func statusesAreTheContractsTable() {
        let expected: [(IdentityError.Code, Int)] = [
            (.invalidRequest, 400), (.invalidAttributes, 400), (.identityVerificationRequired, 401),
            (.invalidIdentityToken, 401), (.forbidden, 403), (.subscriberNotFound, 404), (.tenantNotFound, 404),
            (.mergeSourceIdentified, 409), (.aliasLimitReached, 409), (.unavailable, 503),
        ]
        for (code, status) in expected {
            #expect(APIError(IdentityError(code: code, message: "m")).status == HTTPStatus(status), "\(code)")
        }
        #expect(APIError(.rateLimited, message: "m").status == .tooManyRequests)
        #expect(APIError(.tenantRequired, message: "m").code == "tenant_required")
    }

    @Test func aMergeRefusalIsATypeNotAString() {
        let identified = MergeRefusal.sourceIdentified(anonymousID: "anon_x")
        #expect(identified.error.code == .mergeSourceIdentified && identified.warning.code == .mergeSourceIdentified)
        let capped = MergeRefusal.aliasLimitReached(anonymousID: "anon_x", limit: 3)
        #expect(capped.error.code == .aliasLimitReached && capped.warning.code == .aliasLimitReached)
        #expect(capped.error.message.contains("3"))
    }
}
