import Crypto
import Identity
import JSON
import Testing

/// A fixed clock: 2023-11-14T22:13:20Z.
let verificationNow: Int64 = 1_700_000_000_000
let verificationSecret = IdentityVerifier.key(fromSecret: "bk_isec_0123456789abcdefghijABCDEFGHIJklmnopqrstuvw")

@Suite struct IdentityHashTests {
    @Test func hashMatchesAnIndependentImplementation() {
        // python3 -c "import hmac,hashlib;print(hmac.new(b'secret',b'user_42',hashlib.sha256).hexdigest())"
        #expect(
            IdentityVerifier.identityHash(externalId: "user_42", secret: Array("secret".utf8))
                == "af798d3bfdbad0f62fc0fa761daf43a99c218f0aed5f754a413712527cccc794")
        // The key is the whole secret string, prefix included:
        // python3 -c "import hmac,hashlib;print(hmac.new(b'bk_isec_0123456789abcdefghijABCDEFGHIJklmnopqrstuvw',b'user_42',hashlib.sha256).hexdigest())"
        #expect(
            IdentityVerifier.identityHash(externalId: "user_42", secret: verificationSecret)
                == "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a6")
    }

    @Test func validHashVerifies() throws {
        let hash = IdentityVerifier.identityHash(externalId: "user_42", secret: verificationSecret)
        try IdentityVerifier.verify(
            .hash(hash), externalId: "user_42", secrets: [verificationSecret], nowMillis: verificationNow)
        try IdentityVerifier.verify(
            .hash(hash.uppercased()), externalId: "user_42", secrets: [verificationSecret], nowMillis: verificationNow)
    }

    @Test(arguments: [
        "",  // empty
        "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a7",  // last digit changed
        "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46",  // truncated
        "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a6aa",  // extended
        "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a",  // odd length
        "zz75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a6",  // not hex
        " 3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a6",  // whitespace
    ])
    func wrongHashIsRefused(_ hash: String) {
        #expect(throws: ProofFailure.invalidHash) {
            try IdentityVerifier.verify(
                .hash(hash), externalId: "user_42", secrets: [verificationSecret], nowMillis: verificationNow)
        }
    }

    @Test func hashForOneUserDoesNotProveAnother() {
        let hashA = IdentityVerifier.identityHash(externalId: "user_a", secret: verificationSecret)
        #expect(throws: ProofFailure.invalidHash) {
            try IdentityVerifier.verify(
                .hash(hashA), externalId: "user_b", secrets: [verificationSecret], nowMillis: verificationNow)
        }
        #expect(throws: ProofFailure.invalidHash) {
            try IdentityVerifier.verify(.hash(hashA), externalId: "user_a", secrets: [], nowMillis: verificationNow)
        }
    }

    @Test func failuresCarryStableCodes() {
        #expect(ProofFailure.invalidHash.code.rawValue == "invalid_identity_hash")
        #expect(ProofFailure.invalidToken(reason: "x").code.rawValue == "invalid_identity_token")
        #expect(ProofFailure.tokenExpired.code.rawValue == "identity_token_expired")
        #expect(ProofFailure.invalidToken(reason: "bad signature").message.contains("bad signature"))
    }
}

@Suite struct SecretRotationTests {
    let old = IdentityVerifier.key(fromSecret: "bk_isec_old")
    let new = IdentityVerifier.key(fromSecret: "bk_isec_new")
    var set: IdentitySecretSet {
        IdentitySecretSet(current: new, previous: old, previousExpiresAt: verificationNow + 86_400_000)
    }

    @Test func previousSecretVerifiesUntilItExpires() throws {
        let oldHash = IdentityVerifier.identityHash(externalId: "u1", secret: old)
        let before = verificationNow + 86_400_000 - 1
        try IdentityVerifier.verify(
            .hash(oldHash), externalId: "u1", secrets: set.secrets(atMillis: before), nowMillis: before)
        let after = verificationNow + 86_400_000
        #expect(throws: ProofFailure.invalidHash) {
            try IdentityVerifier.verify(
                .hash(oldHash), externalId: "u1", secrets: set.secrets(atMillis: after), nowMillis: after)
        }
        let oldToken = IdentityVerifier.makeToken(claims: ["sub": "u1", "exp": JSONValue(after / 1000)], secret: old)
        try IdentityVerifier.verify(
            .token(oldToken), externalId: "u1", secrets: set.secrets(atMillis: before), nowMillis: before)
        #expect(throws: ProofFailure.invalidToken(reason: "bad signature")) {
            try IdentityVerifier.verify(
                .token(oldToken), externalId: "u1", secrets: set.secrets(atMillis: after), nowMillis: after)
        }
    }

    @Test func currentSecretAlwaysVerifies() throws {
        let newHash = IdentityVerifier.identityHash(externalId: "u1", secret: new)
        for now in [verificationNow, verificationNow + 86_400_000 * 10] {
            try IdentityVerifier.verify(
                .hash(newHash), externalId: "u1", secrets: set.secrets(atMillis: now), nowMillis: now)
        }
    }

    @Test func secretsList() {
        #expect(set.secrets(atMillis: verificationNow) == [new, old])
        #expect(set.secrets(atMillis: verificationNow + 86_400_000) == [new])
        #expect(IdentitySecretSet(current: new).secrets(atMillis: verificationNow) == [new])
        // A previous key without an expiry never verifies.
        #expect(IdentitySecretSet(current: new, previous: old).secrets(atMillis: verificationNow) == [new])
    }

    @Test func generatedSecretsHaveTheDocumentedShape() {
        let secret = IdentityVerifier.generateSecret()
        #expect(secret.hasPrefix("bk_isec_"))
        #expect(secret.utf8.count == 8 + 43)
        #expect(secret.dropFirst(8).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(IdentityVerifier.generateSecret() != secret)
    }
}
