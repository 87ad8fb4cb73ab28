import Identity
import JSON
import Testing

@Suite struct IDRulesTests {
    static let validExternal: [(String, String)] = [
        ("plain", "user_42"),
        ("email-like", "ada@example.com"),
        ("inner spaces", "Ada Lovelace"),
        ("Chinese", "用户_42"),
        ("Cyrillic", "пользователь"),
        ("emoji", "🐝 buzz"),
        ("255 scalars", String(repeating: "é", count: 255)),
        ("placeholder as a substring", "nullable_user"),
        ("case differs from anon_", "ANON_V1StGXR8_Z5jdHi6B-myT"),
    ]

    static let invalidExternal: [(String, String)] = [
        ("empty", ""),
        ("only spaces", "   "),
        ("256 scalars", String(repeating: "é", count: 256)),
        ("leading space", " user"),
        ("trailing tab", "user\t"),
        ("NUL", "us\u{0}er"),
        ("newline", "us\ner"),
        ("DEL", "us\u{7F}er"),
        ("C1 control", "us\u{85}er"),
        ("anon prefix", "anon_V1StGXR8_Z5jdHi6B-myT"),
        ("malformed anon prefix", "anon_short"),
        ("null", "null"), ("NULL upper", "NULL"), ("quoted null", "\"null\""), ("single-quoted None", "'None'"),
        ("thrice-quoted zero uuid", "\"'`00000000-0000-0000-0000-000000000000`'\""),
        ("nil", "nil"), ("undefined", "Undefined"), ("nan", "NaN"), ("zero", "0"), ("minus one", "-1"),
        ("anonymous", "anonymous"), ("guest", "Guest"), ("unknown", "unknown"), ("object", "[object Object]"),
        ("true", "true"), ("false", "FALSE"), ("id", "id"), ("user_id", "USER_ID"), ("na", "NA"),
        ("all", "all"), ("zero uuid", "00000000-0000-0000-0000-000000000000"),
    ]

    @Test(arguments: validExternal) func acceptsExternalID(_ name: String, _ id: String) throws {
        try IDRules.validateExternalID(id)
    }

    @Test(arguments: invalidExternal) func refusesExternalID(_ name: String, _ id: String) {
        #expect(throws: IdentityError.self, "\(name)") { try IDRules.validateExternalID(id) }
        do {
            try IDRules.validateExternalID(id)
        } catch {
            #expect(error.code == .invalidExternalID)
        }
    }

    @Test func tenantBlockedIDsCompareCaseInsensitively() {
        #expect(throws: IdentityError.self) { try IDRules.validateExternalID("Test-User", blocked: ["test-user"]) }
        #expect(throws: Never.self) { try IDRules.validateExternalID("real-user", blocked: ["test-user"]) }
    }

    @Test func anonymousIDs() throws {
        #expect(IDRules.isAnonymousID("anon_V1StGXR8_Z5jdHi6B-myT"))
        #expect(!IDRules.isAnonymousID("anon_V1StGXR8_Z5jdHi6B-my"))  // 20
        #expect(!IDRules.isAnonymousID("anon_V1StGXR8_Z5jdHi6B-myTT"))  // 22
        #expect(!IDRules.isAnonymousID("anon_V1StGXR8_Z5jdHi6B-my!"))
        #expect(!IDRules.isAnonymousID("Anon_V1StGXR8_Z5jdHi6B-myT"))
        do {
            _ = try IDRules.subscriberID("anon_bad")
            Issue.record("anon_bad was accepted")
        } catch {
            #expect(error.code == .invalidAnonymousID)
        }
        #expect(try IDRules.subscriberID("anon_V1StGXR8_Z5jdHi6B-myT").isAnonymous)
        #expect(try IDRules.subscriberID("user_42").isAnonymous == false)
        #expect(throws: IdentityError.self) { try IDRules.subscriberID("Blocked", blocked: ["blocked"]) }
    }

    @Test func emails() {
        for good in ["ada@example.com", "a.b+c@sub.example.co"] {
            #expect(throws: Never.self) { try EmailRules.validate(good) }
        }
        for bad in ["", "ada", "ada@", "@example.com", "ada@example", "ada @example.com", "a@b@c.com", "ada@.com"] {
            #expect(throws: IdentityError.self, "\(bad)") { try EmailRules.validate(bad) }
        }
    }
}

@Suite struct TimestampTests {
    @Test func formatsWithMilliseconds() {
        #expect(Timestamp(millis: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(millis: 1_800_000_000_123).rfc3339 == "2027-01-15T08:00:00.123Z")
        #expect(Timestamp(millis: 951_782_400_000).rfc3339 == "2000-02-29T00:00:00.000Z")
    }

    /// The bytes appended in place are the String's, in and beyond the four-digit years.
    @Test func appendsWhatItFormats() {
        let edges: [Int64] = [0, 1, 951_782_400_000, 253_402_300_799_999, 253_402_300_800_000, -1, -62_167_219_200_001]
        for millis in edges {
            var writer = JSONWriter(capacity: 1)
            writer.literal("x")
            Timestamp(millis: millis).appendRFC3339(to: &writer)
            #expect(String(decoding: writer.finish(), as: UTF8.self) == "x" + Timestamp(millis: millis).rfc3339)
        }
        #expect(Timestamp(millis: 253_402_300_800_000).rfc3339 == "10000-01-01T00:00:00.000Z")
    }

    @Test func parsesWhatItFormatsAndOffsets() {
        for millis: Int64 in [0, 1, 999, 86_399_999, 951_782_400_000, 1_800_000_000_123, 253_402_300_799_999] {
            #expect(Timestamp(rfc3339: Timestamp(millis: millis).rfc3339)?.millis == millis)
        }
        #expect(Timestamp(rfc3339: "2026-11-30T06:45:29+01:00")?.rfc3339 == "2026-11-30T05:45:29.000Z")
        #expect(
            Timestamp(rfc3339: "2026-11-30T05:45:29.123456Z")?.millis
                == Timestamp(rfc3339: "2026-11-30T05:45:29.123Z")?.millis)
        #expect(Timestamp(rfc3339: "2026-11-30t05:45:29z") != nil)
    }

    @Test(arguments: [
        "", "2026-11-30", "2026-11-30T05:45:29", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-11-30T24:00:00Z", "2026-11-30T05:45:29.Z", "2026-11-30T05:45:29+1:00", "1969-12-31T23:59:59Z",
        "2026-11-30T05:45:29Zjunk", "2026-11-30 05:45:29Z",
    ])
    func refusesMalformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }
}
