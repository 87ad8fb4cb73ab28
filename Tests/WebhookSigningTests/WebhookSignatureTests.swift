import Crypto
import Testing
import WebhookSigning

@Suite struct WebhookSignatureTests {
    // The example in the Standard Webhooks specification (and Svix's docs), computed elsewhere.
    static let specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let specID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let specTimestamp: Int64 = 1_614_265_330
    static let specBody = Array(#"{"test": 2432232314}"#.utf8)
    static let specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    @Test func signsTheSpecificationsExample() throws {
        let header = try WebhookSignature.sign(
            secret: Self.specSecret, id: Self.specID, timestamp: Self.specTimestamp, body: Self.specBody)
        #expect(header == Self.specSignature)
    }

    @Test func verifiesTheSpecificationsExample() throws {
        #expect(
            try WebhookSignature.verify(
                secret: Self.specSecret, id: Self.specID, timestamp: Self.specTimestamp, body: Self.specBody,
                signatureHeader: Self.specSignature))
    }

    @Test func refusesAnyChangeToWhatWasSigned() throws {
        let verify = { (id: String, timestamp: Int64, body: [UInt8], header: String) in
            try WebhookSignature.verify(
                secret: Self.specSecret, id: id, timestamp: timestamp, body: body, signatureHeader: header)
        }
        #expect(try !verify("msg_other", Self.specTimestamp, Self.specBody, Self.specSignature))
        #expect(try !verify(Self.specID, Self.specTimestamp + 1, Self.specBody, Self.specSignature))
        #expect(try !verify(Self.specID, Self.specTimestamp, Self.specBody + [0x20], Self.specSignature))
        #expect(try !verify(Self.specID, Self.specTimestamp, Self.specBody, "v2," + Self.specSignature.dropFirst(3)))
        #expect(try !verify(Self.specID, Self.specTimestamp, Self.specBody, "v1,not base64"))
        #expect(try !verify(Self.specID, Self.specTimestamp, Self.specBody, ""))
        let other = WebhookSignature.generateSecret()
        #expect(
            try !WebhookSignature.verify(
                secret: other, id: Self.specID, timestamp: Self.specTimestamp, body: Self.specBody,
                signatureHeader: Self.specSignature))
    }

    @Test func acceptsOneMatchAmongSeveralSignatures() throws {
        // During a secret rotation a sender may list an old and a new signature.
        let header = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v1a,xyz " + Self.specSignature
        #expect(
            try WebhookSignature.verify(
                secret: Self.specSecret, id: Self.specID, timestamp: Self.specTimestamp, body: Self.specBody,
                signatureHeader: header))
    }

    @Test func newSecretsAreWhsecAndThirtyTwoRandomBytes() throws {
        let a = WebhookSignature.generateSecret()
        let b = WebhookSignature.generateSecret()
        #expect(a.hasPrefix("whsec_"))
        #expect(try WebhookSignature.key(fromSecret: a).count == 32)
        #expect(a != b)
    }

    @Test(arguments: [
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  // no prefix
        "whsec_",  // no key
        "whsec_not*base64",
        "whsec_AAAA",  // 3 bytes: too short to be a key
    ])
    func refusesMalformedSecrets(secret: String) {
        #expect(throws: WebhookSecretError.self) { try WebhookSignature.key(fromSecret: secret) }
    }

    @Test func signatureIsHMACOfIdTimestampAndBody() throws {
        // Independent of sign(): the documented construction, spelled out with the primitives.
        let secret = WebhookSignature.generateSecret()
        let key = try #require(Base64.decode(String(secret.dropFirst(6))))
        let body = Array("{\"id\":\"evt_1\"}".utf8)
        let mac = HMAC.sha256(key: key, message: Array("evt_1.1700000000.".utf8) + body)
        #expect(
            try WebhookSignature.sign(secret: secret, id: "evt_1", timestamp: 1_700_000_000, body: body) == "v1,"
                + Base64.encode(mac))
    }
}
