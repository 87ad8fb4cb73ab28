import Identity
import JSON
import Testing

@testable import API

/// The subscriber is written straight to bytes (no `JSONValue` tree); these check those bytes
/// against a tree of API.md §4 built here member by member and serialised by the JSON module:
/// same members, same order, same escaping.
@Suite struct SubscriberRenderingTests {
    /// API.md §4's subscriber as a tree: the reference the bytes must equal.
    static func expectedTree(_ s: SubscriberSnapshot) -> JSONValue {
        let r = s.record
        func time(_ t: Timestamp) -> JSONValue { .string(t.rfc3339) }
        var attributes = JSONObject()
        var sources = JSONObject()
        for (name, entry) in s.attributes {
            attributes[name] = entry.value
            sources[name] = .string(entry.setByBackend ? "backend" : "app")
        }
        var channels = JSONObject()
        if let email = r.email {
            channels["email"] = ["address": .string(email), "subscribed": .bool(r.emailSubscribed)]
        }
        var preferences = JSONObject()
        for p in s.preferences {
            preferences[p.topic] = ["subscribed": .bool(p.subscribed), "updatedAt": time(p.updatedAt)]
        }
        let push: [JSONValue] = s.pushSubscriptions.map { p in
            [
                "deviceId": .string(p.deviceID), "token": .string(p.token), "platform": .string(p.platform),
                "createdAt": time(p.createdAt), "updatedAt": time(p.updatedAt),
            ]
        }
        let devices: [JSONValue] = s.devices.map { d in
            [
                "deviceId": .string(d.deviceID), "platform": d.platform.map(JSONValue.string) ?? .null,
                "appVersion": d.appVersion.map(JSONValue.string) ?? .null,
                "osVersion": d.osVersion.map(JSONValue.string) ?? .null,
                "model": d.model.map(JSONValue.string) ?? .null, "locale": d.locale.map(JSONValue.string) ?? .null,
                "timeZone": d.timeZone.map(JSONValue.string) ?? .null, "lastSeenAt": time(d.lastSeenAt),
            ]
        }
        return .object([
            "id": .string(r.id), "anonymous": .bool(r.anonymous), "verified": .bool(r.verified),
            "email": r.email.map(JSONValue.string) ?? .null, "attributes": .object(attributes),
            "attributeSources": .object(sources), "channels": .object(channels),
            "aliases": .array(s.aliases.map(JSONValue.string)), "pushSubscriptions": .array(push),
            "preferences": .object(preferences), "devices": .array(devices),
            "eventCount": .number(String(r.eventCount)),
            "createdAt": time(r.createdAt), "updatedAt": time(r.updatedAt),
        ])
    }

    static let bare = SubscriberSnapshot(
        record: SubscriberRecord(
            key: 1, tenantID: "t", id: "anon_000000000000000000001", anonymous: true,
            createdAt: Timestamp(millis: 0), updatedAt: Timestamp(millis: 1)),
        attributes: [], aliases: [], pushSubscriptions: [], preferences: [], devices: [])

    static let full = SubscriberSnapshot(
        record: SubscriberRecord(
            key: 7, tenantID: "t", id: "user \"42\" \\ é 🎉 \u{1}\u{1F}", anonymous: false, verified: true,
            email: "a\"b@example.com", emailSubscribed: true, lastSeq: 12, eventCount: 9_007_199_254_740_993,
            createdAt: Timestamp(millis: 1_700_000_000_123), updatedAt: Timestamp(millis: 253_402_300_799_999)),
        attributes: [
            ("n", AttributeEntry(value: .number("3"), setByBackend: false)),
            ("nested", AttributeEntry(value: ["a": [1, nil, true], "b\n": "x"], setByBackend: true)),
            ("tab\tname", AttributeEntry(value: .string("\u{2028}"), setByBackend: false)),
        ],
        aliases: ["anon_x", "old\"id"],
        pushSubscriptions: [
            PushSubscriptionRecord(
                deviceID: "d1", token: "tok\\en", platform: "ios", createdAt: Timestamp(millis: 5),
                updatedAt: Timestamp(millis: 6)),
            PushSubscriptionRecord(
                deviceID: "d2", token: "t", platform: "android", createdAt: Timestamp(millis: 7),
                updatedAt: Timestamp(millis: 8)),
        ],
        preferences: [
            PreferenceRecord(topic: "news", subscribed: true, updatedAt: Timestamp(millis: 9)),
            PreferenceRecord(topic: "pro\"mo", subscribed: false, updatedAt: Timestamp(millis: 10)),
        ],
        devices: [
            DeviceRecord(deviceID: "d1", platform: "ios", model: "iPhone \"15\"", lastSeenAt: Timestamp(millis: 11)),
            DeviceRecord(
                deviceID: "d2", platform: "android", appVersion: "1.2", osVersion: "14", model: "Pixel",
                locale: "fr_FR", timeZone: "Europe/Paris", lastSeenAt: Timestamp(millis: 12)),
        ])

    @Test(arguments: [bare, full])
    func bytesAreTheTreeSerialised(_ snapshot: SubscriberSnapshot) throws {
        let data = Rendering.subscriberData(snapshot)
        let expected = JSONValue.object(["subscriber": Self.expectedTree(snapshot)])
        #expect(String(decoding: data, as: UTF8.self) == expected.jsonString)
        // And it is JSON a parser reads back to the same values.
        #expect(try JSONParser.parse(data) == expected)
    }

    @Test func aPageIsItsSubscribersInOrderAndTheCursor() throws {
        let page = Rendering.subscriberPage([Self.full, Self.bare], nextCursor: "c\"1")
        let expected: JSONValue = [
            "subscribers": [Self.expectedTree(Self.full), Self.expectedTree(Self.bare)], "nextCursor": "c\"1",
        ]
        #expect(String(decoding: page, as: UTF8.self) == expected.jsonString)
        let last = Rendering.subscriberPage([], nextCursor: nil)
        #expect(String(decoding: last, as: UTF8.self) == #"{"subscribers":[],"nextCursor":null}"#)
    }

    /// A write's answer: the subscriber first, then the handler's members after it.
    @Test func aShownSubscriberComesFirstThenTheHandlersMembers() throws {
        var reply = Reply(["merge": ["shape": "rename"], "subscriber": "the handler's", "n": 1])
        reply.subscriberToShow = .snapshot(Self.full)
        reply.showSubscriber { _ in
            Issue.record("nothing to read after a commit"); return Self.bare
        }
        let bytes = try #require(reply.serializedData)
        let expected: JSONValue = ["subscriber": Self.expectedTree(Self.full), "merge": ["shape": "rename"], "n": 1]
        #expect(String(decoding: bytes, as: UTF8.self) == expected.jsonString)
        #expect(reply.subscriberToShow == nil)
    }
}
