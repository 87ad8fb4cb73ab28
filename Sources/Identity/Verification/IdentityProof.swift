/// What an app presents to show a backend vouched for an external id (API.md §9).
package enum IdentityProof: Sendable, Equatable {
    /// `identityHash` / `BuzzKit-Identity-Hash`: hex HMAC-SHA256 of the external id.
    case hash(String)
    /// `identityToken` / `BuzzKit-Identity-Token`: an HS256 JWT whose subject is the external id.
    case token(String)
}

/// Why a proof was refused; each case maps to one stable 401 error code.
package enum ProofFailure: Error, Sendable, Equatable {
    /// The hash is malformed or matches no secret (`invalid_identity_hash`).
    case invalidHash
    /// The token is malformed, badly signed, for someone else, or its claims are unacceptable
    /// (`invalid_identity_token`); `reason` says which, for the error message.
    case invalidToken(reason: String)
    /// The token was valid but its `exp` has passed (`identity_token_expired`).
    case tokenExpired

    /// The stable error code of API.md §2.
    package var code: IdentityError.Code {
        switch self {
        case .invalidHash: .invalidIdentityHash
        case .invalidToken: .invalidIdentityToken
        case .tokenExpired: .identityTokenExpired
        }
    }

    /// A sentence for people; never contains a secret or the expected hash.
    package var message: String {
        switch self {
        case .invalidHash: "The identity hash does not match the external id."
        case .invalidToken(let reason): "The identity token is invalid: \(reason)."
        case .tokenExpired: "The identity token has expired."
        }
    }
}
