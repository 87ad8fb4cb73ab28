import Crypto
import Identity
import JSON
import Testing

private let nowSeconds = verificationNow / 1000
private let otherSecret = IdentityVerifier.key(fromSecret: "bk_isec_someoneElse")

/// base64url of a JSON value's compact text.
private func segment(_ value: JSONValue) -> String {
    Base64URL.encode(value.jsonBytes)
}

/// header.payload.signature with the signature computed over the segments exactly as given.
private func signed(_ header: String, _ payload: String, secret: [UInt8] = verificationSecret) -> String {
    let input = header + "." + payload
    return input + "." + Base64URL.encode(HMAC.sha256(key: secret, message: Array(input.utf8)))
}

private let hs256 = segment(["alg": "HS256", "typ": "JWT"])
private func claims(sub: String = "user_42", exp: Int64 = nowSeconds + 3600) -> JSONObject {
    ["sub": .string(sub), "exp": JSONValue(exp)]
}
private let valid = IdentityVerifier.makeToken(claims: claims(), secret: verificationSecret)

/// The valid token with one segment replaced.
private func replacing(_ index: Int, with text: String, in token: String = valid) -> String {
    var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    parts[index] = text
    return parts.joined(separator: ".")
}

@Suite struct JWTTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let token: String
        let externalId: String
        /// nil: accepted.
        let failure: ProofFailure?
        init(_ name: String, _ token: String, externalId: String = "user_42", _ failure: ProofFailure?) {
            self.name = name
            self.token = token
            self.externalId = externalId
            self.failure = failure
        }
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case("valid sub", valid, nil),
        Case(
            "valid userId",
            IdentityVerifier.makeToken(
                claims: ["userId": "user_42", "exp": JSONValue(nowSeconds + 60)], secret: verificationSecret),
            nil),
        Case(
            "sub wins over userId",
            signed(hs256, segment(["sub": "user_42", "userId": "other", "exp": JSONValue(nowSeconds + 60)])), nil),
        Case("no typ", signed(segment(["alg": "HS256"]), segment(.object(claims()))), nil),
        Case(
            "fractional exp", signed(hs256, segment(["sub": "user_42", "exp": .number("\(nowSeconds + 60).5")])), nil),
        Case(
            "nbf in the past, iat ignored",
            signed(
                hs256,
                segment([
                    "sub": "user_42", "exp": JSONValue(nowSeconds + 60), "nbf": JSONValue(nowSeconds - 10),
                    "iat": "junk",
                ])), nil),
        Case(
            "nbf within leeway",
            signed(
                hs256,
                segment(["sub": "user_42", "exp": JSONValue(nowSeconds + 600), "nbf": JSONValue(nowSeconds + 60)])), nil
        ),
        Case(
            "exactly 30 days",
            IdentityVerifier.makeToken(claims: claims(exp: nowSeconds + 30 * 86_400), secret: verificationSecret), nil),
        Case(
            "expired within leeway",
            IdentityVerifier.makeToken(claims: claims(exp: nowSeconds - 59), secret: verificationSecret), nil),

        Case(
            "alg none", signed(segment(["alg": "none", "typ": "JWT"]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported alg")),
        Case(
            "alg none, empty signature",
            replacing(2, with: "", in: signed(segment(["alg": "none"]), segment(.object(claims())))),
            .invalidToken(reason: "unsupported alg")),
        Case(
            "HS512", signed(segment(["alg": "HS512", "typ": "JWT"]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported alg")),
        Case(
            "lowercase hs256", signed(segment(["alg": "hs256"]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported alg")),
        Case(
            "missing alg", signed(segment(["typ": "JWT"]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported alg")),
        Case(
            "typ not JWT", signed(segment(["alg": "HS256", "typ": "JWE"]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported typ")),
        Case(
            "crit header", signed(segment(["alg": "HS256", "crit": ["x"]]), segment(.object(claims()))),
            .invalidToken(reason: "unsupported crit header")),
        Case(
            "signed with another secret", IdentityVerifier.makeToken(claims: claims(), secret: otherSecret),
            .invalidToken(reason: "bad signature")),
        Case(
            "tampered payload, signature kept", replacing(1, with: segment(.object(claims(sub: "admin")))),
            externalId: "admin", .invalidToken(reason: "bad signature")),
        Case(
            "tampered header, signature kept", replacing(0, with: segment(["alg": "HS256"])),
            .invalidToken(reason: "bad signature")),
        Case(
            "truncated signature",
            replacing(
                2, with: Base64URL.encode(Array(Base64URL.decode(String(valid.split(separator: ".")[2]))!.prefix(16)))),
            .invalidToken(reason: "bad signature")),
        Case("missing exp", signed(hs256, segment(["sub": "user_42"])), .invalidToken(reason: "missing exp")),
        Case(
            "exp a string", signed(hs256, segment(["sub": "user_42", "exp": "9999999999"])),
            .invalidToken(reason: "exp is not a number")),
        Case(
            "exp 31 days ahead",
            IdentityVerifier.makeToken(claims: claims(exp: nowSeconds + 31 * 86_400), secret: verificationSecret),
            .invalidToken(reason: "exp too far in the future (at most 30 days)")),
        Case(
            "exp astronomically far", signed(hs256, segment(["sub": "user_42", "exp": .number("1e400")])),
            .invalidToken(reason: "exp too far in the future (at most 30 days)")),
        Case(
            "expired", IdentityVerifier.makeToken(claims: claims(exp: nowSeconds - 61), secret: verificationSecret),
            .tokenExpired),
        Case(
            "sub mismatch", IdentityVerifier.makeToken(claims: claims(sub: "user_43"), secret: verificationSecret),
            .invalidToken(reason: "subject mismatch")),
        Case(
            "sub differs only in case",
            IdentityVerifier.makeToken(claims: claims(sub: "USER_42"), secret: verificationSecret),
            .invalidToken(reason: "subject mismatch")),
        Case(
            "sub not a string", signed(hs256, segment(["sub": 42, "exp": JSONValue(nowSeconds + 60)])),
            externalId: "42", .invalidToken(reason: "sub is not a string")),
        Case(
            "no subject", signed(hs256, segment(["exp": JSONValue(nowSeconds + 60)])),
            .invalidToken(reason: "missing sub")),
        Case(
            "nbf in the future",
            signed(
                hs256,
                segment(["sub": "user_42", "exp": JSONValue(nowSeconds + 600), "nbf": JSONValue(nowSeconds + 61)])),
            .invalidToken(reason: "token not valid yet (nbf)")),
        Case(
            "two segments", String(valid.split(separator: ".").prefix(2).joined(separator: ".")),
            .invalidToken(reason: "expected 3 dot-separated segments, found 2")),
        Case("four segments", valid + ".e30", .invalidToken(reason: "expected 3 dot-separated segments, found 4")),
        Case("empty token", "", .invalidToken(reason: "expected 3 dot-separated segments, found 1")),
        Case(
            "padding in header",
            signed(Base64URL.encode(Array(#"{"alg":"HS256"}"#.utf8)) + "=", segment(.object(claims()))),
            .invalidToken(reason: "header is not valid base64url")),
        Case(
            "padding in payload", signed(hs256, segment(.object(claims())) + "=="),
            .invalidToken(reason: "payload is not valid base64url")),
        Case("padding in signature", valid + "=", .invalidToken(reason: "signature is not valid base64url")),
        Case("standard base64 chars", signed(hs256, "eyJ+/"), .invalidToken(reason: "payload is not valid base64url")),
        Case("whitespace in token", " " + valid, .invalidToken(reason: "header is not valid base64url")),
        Case(
            "non-JSON header", signed(Base64URL.encode(Array("alg=HS256".utf8)), segment(.object(claims()))),
            .invalidToken(reason: "header is not a JSON object")),
        Case(
            "header an array", signed(segment(["HS256"]), segment(.object(claims()))),
            .invalidToken(reason: "header is not a JSON object")),
        Case(
            "non-JSON payload", signed(hs256, Base64URL.encode(Array("sub=user_42".utf8))),
            .invalidToken(reason: "payload is not a JSON object")),
        Case(
            "payload not an object", signed(hs256, segment(["user_42"])),
            .invalidToken(reason: "payload is not a JSON object")),
        Case(
            "payload a string", signed(hs256, segment("user_42")), .invalidToken(reason: "payload is not a JSON object")
        ),
    ]

    @Test(arguments: cases) func verify(_ test: Case) {
        let result: Result<Void, ProofFailure> = Result { () throws(ProofFailure) in
            try IdentityVerifier.verify(
                .token(test.token), externalId: test.externalId, secrets: [otherSecret.reversed(), verificationSecret],
                nowMillis: verificationNow)
        }
        switch (result, test.failure) {
        case (.success, nil): break
        case (.failure(let actual), let expected?): #expect(actual == expected)
        case (.success, let expected?): Issue.record("accepted, expected \(expected)")
        case (.failure(let actual), nil): Issue.record("refused with \(actual)")
        }
    }

    @Test func tokenFromAnIndependentImplementation() throws {
        // Made by Python's json/hmac/base64 modules (note the spaces json.dumps puts in):
        //   h = b64url(json.dumps({'alg':'HS256','typ':'JWT'})); p = b64url(json.dumps({'sub':'user_42','exp':1700003600,'iat':1700000000}))
        //   h + '.' + p + '.' + b64url(hmac.new(b'bk_isec_0123456789abcdefghijABCDEFGHIJklmnopqrstuvw', (h+'.'+p).encode(), hashlib.sha256).digest())
        let token =
            "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidXNlcl80MiIsICJleHAiOiAxNzAwMDAzNjAwLCAiaWF0IjogMTcwMDAwMDAwMH0.iZYJlsX0hFeK1fytLUumbgCz3zznjzDi7rvJX0Py2pc"
        try IdentityVerifier.verify(
            .token(token), externalId: "user_42", secrets: [verificationSecret], nowMillis: verificationNow)
        #expect(throws: ProofFailure.tokenExpired) {
            try IdentityVerifier.verify(
                .token(token), externalId: "user_42", secrets: [verificationSecret], nowMillis: 1_700_003_661_000)
        }
    }

    @Test func madeTokensHaveTheStandardHeader() throws {
        let header = try #require(Base64URL.decode(String(valid.split(separator: ".")[0])))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"HS256","typ":"JWT"}"#)
    }
}
