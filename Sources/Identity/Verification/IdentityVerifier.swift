import Crypto
import JSON

/// Checks identity proofs: HMAC hashes and HS256 JWTs (RFC 7519) over the tenant's secrets.
///
/// ```swift
/// let keys = secretSet.secrets(atMillis: now)
/// try IdentityVerifier.verify(.hash(header), externalId: "user_42", secrets: keys, nowMillis: now)
/// ```
package enum IdentityVerifier {
    /// Clock skew tolerated on `exp` and `nbf` between the backend and us.
    package static let leewayMillis: Int64 = 60_000
    /// Furthest `exp` accepted: a stolen long-lived token would be a standing login.
    package static let maximumLifetimeMillis: Int64 = 30 * 24 * 3_600_000
    /// Prefix of every identity secret string.
    package static let secretPrefix = "bk_isec_"

    /// A fresh identity secret string: `bk_isec_` and 43 base62 characters (~256 bits).
    package static func generateSecret() -> String {
        secretPrefix + SecureRandom.token(length: 43)
    }

    /// The HMAC key for a secret string: its UTF-8 bytes, prefix included, so backends use the string as-is.
    package static func key(fromSecret secret: String) -> [UInt8] {
        Array(secret.utf8)
    }

    // MARK: - Hash

    /// hex(HMAC-SHA256(key: secret, message: utf8(externalId))) — what a backend computes.
    package static func identityHash(externalId: String, secret: [UInt8]) -> String {
        Hex.encode(HMAC.sha256(key: secret, message: Array(externalId.utf8)))
    }

    // MARK: - Verification

    /// Verifies a proof for `externalId` against every valid secret; throws ``ProofFailure``.
    ///
    /// - Parameters:
    ///   - proof: the hash or token the app sent.
    ///   - externalId: the id the call names; a token's `sub` (or `userId`) must equal it exactly.
    ///   - secrets: HMAC keys currently valid, e.g. ``IdentitySecretSet/secrets(atMillis:)``.
    ///   - nowMillis: the current time in milliseconds since the epoch.
    package static func verify(
        _ proof: IdentityProof, externalId: String, secrets: [[UInt8]], nowMillis: Int64
    ) throws(ProofFailure) {
        switch proof {
        case .hash(let hash):
            try verifyHash(hash, externalId: externalId, secrets: secrets)
        case .token(let token):
            try verifyToken(token, externalId: externalId, secrets: secrets, nowMillis: nowMillis)
        }
    }

    private static func verifyHash(_ hash: String, externalId: String, secrets: [[UInt8]]) throws(ProofFailure) {
        // Hex of any case is accepted: backends differ in what their hex helpers produce.
        guard let presented = Hex.decode(hash) else { throw .invalidHash }
        let message = Array(externalId.utf8)
        var matched = false
        // Every secret is tried, so timing does not reveal which one matched.
        for secret in secrets where constantTimeEquals(HMAC.sha256(key: secret, message: message), presented) {
            matched = true
        }
        guard matched else { throw .invalidHash }
    }

    private static func verifyToken(
        _ token: String, externalId: String, secrets: [[UInt8]], nowMillis: Int64
    ) throws(ProofFailure) {
        // JWS compact serialization (RFC 7515 §7.1): exactly header.payload.signature.
        let segments = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw .invalidToken(reason: "expected 3 dot-separated segments, found \(segments.count)")
        }
        // Every segment must be canonical base64url before anything else is looked at.
        guard let headerBytes = Base64URL.decode(String(Substring(segments[0]))) else {
            throw .invalidToken(reason: "header is not valid base64url")
        }
        guard let payloadBytes = Base64URL.decode(String(Substring(segments[1]))) else {
            throw .invalidToken(reason: "payload is not valid base64url")
        }
        guard let signature = Base64URL.decode(String(Substring(segments[2]))) else {
            throw .invalidToken(reason: "signature is not valid base64url")
        }

        // The header decides how to check the signature, so it is read first; nothing in it is
        // trusted beyond refusing everything but HS256 (no "none", no algorithm confusion).
        guard let header = try? JSONParser.parse(headerBytes).objectValue else {
            throw .invalidToken(reason: "header is not a JSON object")
        }
        guard header["alg"]?.stringValue == "HS256" else {
            throw .invalidToken(reason: "unsupported alg")
        }
        if let typ = header["typ"], typ.stringValue != "JWT" {
            throw .invalidToken(reason: "unsupported typ")
        }
        // RFC 7515 §4.1.11: extensions we do not understand listed in "crit" must be refused.
        if header.contains(key: "crit") {
            throw .invalidToken(reason: "unsupported crit header")
        }

        // The MAC covers the segments exactly as sent (RFC 7515 §5.2 step 8).
        let signingInput = Array(token.utf8.prefix(segments[0].count + 1 + segments[1].count))
        var signed = false
        for secret in secrets where constantTimeEquals(HMAC.sha256(key: secret, message: signingInput), signature) {
            signed = true
        }
        guard signed else { throw .invalidToken(reason: "bad signature") }

        // Only now are the claims trusted.
        guard let claims = try? JSONParser.parse(payloadBytes).objectValue else {
            throw .invalidToken(reason: "payload is not a JSON object")
        }
        try checkClaims(claims, externalId: externalId, nowMillis: nowMillis)
    }

    private static func checkClaims(_ claims: JSONObject, externalId: String, nowMillis: Int64) throws(ProofFailure) {
        // "sub" is the JWT name; "userId" is accepted for SDKs that already mint tokens with it.
        let subject: String
        if let sub = claims["sub"] {
            guard let value = sub.stringValue else { throw .invalidToken(reason: "sub is not a string") }
            subject = value
        } else if let userId = claims["userId"] {
            guard let value = userId.stringValue else { throw .invalidToken(reason: "userId is not a string") }
            subject = value
        } else {
            throw .invalidToken(reason: "missing sub")
        }
        guard subject == externalId else { throw .invalidToken(reason: "subject mismatch") }

        // NumericDate (RFC 7519 §2) is seconds and may be fractional; compared in milliseconds.
        guard let expClaim = claims["exp"] else { throw .invalidToken(reason: "missing exp") }
        guard let exp = expClaim.doubleValue else { throw .invalidToken(reason: "exp is not a number") }
        let now = Double(nowMillis)
        let leeway = Double(leewayMillis)
        if exp * 1000 + leeway < now { throw .tokenExpired }
        if exp * 1000 > now + Double(maximumLifetimeMillis) + leeway {
            throw .invalidToken(reason: "exp too far in the future (at most 30 days)")
        }
        if let nbfClaim = claims["nbf"] {
            guard let nbf = nbfClaim.doubleValue else { throw .invalidToken(reason: "nbf is not a number") }
            if nbf * 1000 > now + leeway { throw .invalidToken(reason: "token not valid yet (nbf)") }
        }
        // "iat" is deliberately ignored: exp alone bounds the token's life.
    }

    // MARK: - Minting

    /// For tests and the CLI: makes an HS256 token with header `{"alg":"HS256","typ":"JWT"}`.
    /// - Parameters:
    ///   - claims: the payload, e.g. `["sub": "user_42", "exp": 1_900_000_000]`.
    ///   - secret: the HMAC key, e.g. ``key(fromSecret:)``.
    package static func makeToken(claims: JSONObject, secret: [UInt8]) -> String {
        let header: JSONValue = ["alg": "HS256", "typ": "JWT"]
        let signingInput =
            Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(JSONValue.object(claims).jsonBytes)
        return signingInput + "." + Base64URL.encode(HMAC.sha256(key: secret, message: Array(signingInput.utf8)))
    }
}
