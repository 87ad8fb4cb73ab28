import Foundation
import XCTest

@testable import BuzzKit

final class IdentityTests: XCTestCase {
    override func tearDown() {
        TemporaryFolders.shared.removeAll()
        super.tearDown()
    }

    func testAnonymousIdIsMintedOnceAndHasTheServersShape() throws {
        let directory = temporaryStorage()
        let first = try makeClient(directory, transport: FakeTransport()).anonymousId
        XCTAssertNotNil(first.range(of: "^anon_[A-Za-z0-9_-]{21}$", options: .regularExpression), first)
        XCTAssertEqual(try makeClient(directory, transport: FakeTransport()).anonymousId, first, "persisted")
        let others = (0..<200).map { _ in SecureRandom.anonymousID() }
        XCTAssertEqual(Set(others).count, 200)
        // Every character of the alphabet shows up: the mapping from bytes does not skew.
        XCTAssertEqual(Set(others.joined().dropFirst(5)).count > 60, true)
    }

    func testIdentifyRepeatedWithNothingNewSendsNothing() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.identify("user_1", email: "ada@example.com", identityHash: "h", attributes: ["plan": "trial"])
        client.identify("user_1", email: "ada@example.com", identityHash: "h", attributes: ["plan": "trial"])
        drain(client)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNotNil(transport.requests[0].json["anonymousId"])
        client.identify("user_1", email: "ada@example.com", identityHash: "h", attributes: ["plan": "pro"])
        drain(client)
        XCTAssertEqual(transport.requests.count, 2, "a change is sent")
        XCTAssertNil(transport.requests[1].json["anonymousId"], "the anonymous id goes with the first identify only")
        XCTAssertEqual((transport.requests[1].json["attributes"] as? [String: Any])?["plan"] as? String, "pro")
        let device = transport.requests[1].json["device"] as? [String: Any] ?? [:]
        XCTAssertEqual(device["platform"] as? String, "ios")
        XCTAssertEqual(device["model"] as? String, "iPhone16,2")
        XCTAssertNil(device["locale"], "absent values are left out")
    }

    func testARefusedIdentifyLendsNoProofToTheAnonymousWork() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        let anonymous = client.anonymousId
        client.track("before")
        client.identify("user_5", identityHash: "wrong")
        client.track("after")
        transport.answer(status(401, errorCode: "invalid_identity_hash"))
        drain(client)
        XCTAssertEqual(transport.requests.map(\.line), ["POST /v1/identify", "POST /v1/events", "POST /v1/events"])
        XCTAssertEqual(transport.requests[1].json["subscriberId"] as? String, anonymous)
        XCTAssertNil(transport.requests[1].headers["BuzzKit-Identity-Hash"], "no merge, no borrowed proof")
        XCTAssertEqual(client.queueStatus.rejectedOperations, 1)
    }

    func testAnAnonymousIdThatBelongsToSomeoneElseBorrowsNoProof() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.track("before")
        client.identify("user_6", identityHash: "h6")
        // A restored backup: the anonymous id is another person's alias; the server merges nothing.
        let none =
            #"{"success":true,"data":{"merge":{"shape":"none"}},"metadata":{"warnings":[{"code":"merge_source_identified"}]}}"#
        transport.answer(.response(status: 200, retryAfter: nil, body: Array(none.utf8)))
        drain(client)
        XCTAssertEqual(transport.requests.map(\.line), ["POST /v1/identify", "POST /v1/events"])
        XCTAssertNil(transport.requests[1].headers["BuzzKit-Identity-Hash"])
    }

    func testSetAttributesWithNothingNewSendsNothing() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        for _ in 0..<5 { client.setAttributes(["plan": "pro", "streak": 4]) }
        client.setAttributes(["streak": 4])
        client.setAttributes(["streak": 5])
        client.identify("user_8")
        client.setAttributes(["plan": "pro"])  // another subscriber: sent again
        drain(client)
        XCTAssertEqual(
            transport.requests.filter { $0.method == "PATCH" }.map { ($0.json["attributes"] as? [String: Any])?.count },
            [2, 1, 1])
    }

    func testInvalidExternalIdsAreRefusedOnTheDevice() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        for bad in [
            "", " user", "anon_x", "null", "\"undefined\"", "GUEST", String(repeating: "a", count: 256), "a\u{0}b",
        ] {
            client.identify(bad)
        }
        XCTAssertNil(client.externalId)
        drain(client)
        XCTAssertEqual(transport.requests.count, 0)
    }

    func testLogoutDeletesThePushSubscriptionThenReRegistersUnderAFreshAnonymousId() throws {
        let transport = FakeTransport()
        let directory = temporaryStorage()
        let client = try makeClient(directory, transport: transport)
        let first = client.anonymousId
        client.setPushToken("tok", permission: .authorized)
        client.identify("user_1", identityToken: "jwt1")
        client.track("before_logout")
        client.logout()
        client.track("after_logout")
        let second = client.anonymousId
        XCTAssertNotEqual(second, first)
        XCTAssertNil(client.externalId)
        drain(client)
        let device = BuzzKitClient.pathComponent(client.deviceId)
        XCTAssertEqual(
            transport.requests.map(\.line),
            [
                "POST /v1/identify", "PUT /v1/subscribers/\(first)/push-subscriptions/\(device)",
                "PUT /v1/subscribers/user_1/push-subscriptions/\(device)", "POST /v1/events",
                "DELETE /v1/subscribers/user_1/push-subscriptions/\(device)",
                "PUT /v1/subscribers/\(second)/push-subscriptions/\(device)", "POST /v1/events",
            ])
        let requests = transport.requests
        XCTAssertEqual(requests[3].json["subscriberId"] as? String, "user_1", "queued before logout: the old identity")
        XCTAssertEqual(requests[4].headers["BuzzKit-Identity-Token"], "jwt1")
        XCTAssertNil(requests[5].headers["BuzzKit-Identity-Token"], "the proof is dropped at logout")
        XCTAssertEqual(requests[5].json["permission"] as? String, "authorized")
        XCTAssertEqual(requests[6].json["subscriberId"] as? String, second)

        // Many logouts: never an id seen before, also after a relaunch.
        var seen: Set<String> = [first, second]
        for _ in 0..<20 {
            client.logout()
            XCTAssertTrue(seen.insert(client.anonymousId).inserted)
        }
        let current = client.anonymousId
        client.close()
        let relaunched = try makeClient(directory, transport: FakeTransport())
        XCTAssertEqual(relaunched.anonymousId, current)
        relaunched.logout()
        XCTAssertFalse(seen.contains(relaunched.anonymousId))
    }

    func testNotificationPermissionIsRefreshedThroughThePushRegistration() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.setNotificationPermission(.notDetermined)
        client.setPushToken("tok")
        client.setPushToken("tok")
        client.setNotificationPermission(.denied)
        drain(client)
        XCTAssertEqual(transport.requests.map { $0.json["permission"] as? String }, ["notDetermined", "denied"])
    }

    func testReservedAttributeKeysAndBadEventNamesNeverReachTheQueue() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.setAttributes(["$notificationPermission": "authorized"])
        client.track("")
        client.track("$subscriber.merged")
        client.track(String(repeating: "n", count: 129))
        client.track("$session.start")
        drain(client)
        XCTAssertEqual(transport.requests.map(\.eventNames), [["$session.start"]])
    }

    func testAnIdentifyRefusedForItsAttributesIsSentAgainWithoutThem() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.identify(
            "user_3", email: "ada@example.com", attributes: ["big": .string(String(repeating: "x", count: 5000))])
        transport.answer(status(400, errorCode: "invalid_attributes"))
        let steps = drain(client)
        XCTAssertEqual(transport.requests.count, 2, "\(steps) \(transport.requests.map(\.line))")
        XCTAssertNotNil(transport.requests[0].json["attributes"])
        XCTAssertNil(transport.requests[1].json["attributes"])
        XCTAssertNotEqual(
            transport.requests[0].headers["Idempotency-Key"], transport.requests[1].headers["Idempotency-Key"],
            "another body, another key")
        XCTAssertNotNil(transport.requests[1].json["anonymousId"], "the merge still happens")
    }

    func testSessionsStartOnActivationAndEndAfterTheTimeoutInBackground() throws {
        let transport = FakeTransport()
        let clock = ManualWallClock()
        let client = try makeClient(temporaryStorage(), transport: transport, clock: clock)
        client.applicationDidBecomeActive()
        clock.advance(60)
        client.applicationDidEnterBackground()
        clock.advance(10)
        client.applicationDidBecomeActive()  // back within 30 s: the same session
        clock.advance(5)
        client.applicationDidEnterBackground()
        clock.advance(31)
        client.applicationDidBecomeActive()  // the timer never ran (suspended app): ended when it left
        drain(client)
        let events = transport.requests.flatMap { $0.json["events"] as? [[String: Any]] ?? [] }
        XCTAssertEqual(events.map { $0["name"] as? String }, ["$session.start", "$session.end", "$session.start"])
        XCTAssertEqual(
            events[1]["timestamp"] as? String,
            Timestamp.rfc3339(millis: Int64((clock.now() - 31).timeIntervalSince1970 * 1000)))
        XCTAssertEqual((events[1]["properties"] as? [String: Any])?["durationSeconds"] as? Int, 75)
        // The timer path: still in background after the timeout.
        client.applicationDidEnterBackground()
        client.sessionTimerFired(generation: Int.max)  // a stale timer does nothing
        drain(client)
        XCTAssertEqual(transport.requests.count, 1)
    }
}

final class ValueTests: XCTestCase {
    func testJSONValueLiteralsAndNonFiniteNumbers() {
        let value: JSONValue = ["s": "x", "i": 4, "d": 0.5, "b": true, "n": nil, "a": [1, "two"], "o": ["k": false]]
        XCTAssertEqual(
            value.jsonText, #"{"a":[1,"two"],"b":true,"d":0.5,"i":4,"n":null,"o":{"k":false},"s":"x"}"#)
        XCTAssertEqual(JSONValue.number(.nan), .null)
        XCTAssertEqual(JSONValue.number(-.infinity), .null)
        XCTAssertEqual(JSONValue.double(.infinity).jsonText, "null")
        XCTAssertEqual(JSONValue.string("q\"\\\n\u{1}é").jsonText, #""q\"\\\n\u0001é""#)
        let parsed = try? JSONSerialization.jsonObject(with: Data(value.jsonText.utf8)) as? [String: Any]
        XCTAssertEqual(parsed?["i"] as? Int, 4)
    }

    func testTimestampsMatchFoundationsFormatter() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for millis: Int64 in [0, 951_782_400_123, 1_709_164_800_999, 4_102_444_799_001, -86_400_001] {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
            XCTAssertEqual(Timestamp.rfc3339(millis: millis), expected)
        }
    }
}
