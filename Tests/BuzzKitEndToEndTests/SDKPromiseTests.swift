import BuzzKit
import Foundation
import Glibc
import TestSupport
import XCTest

/// The seeds' promises, each kept by the SDK against the real `buzzkit` binary.
final class SDKPromiseTests: XCTestCase {
    /// Offline first launch: the server is down while the app tracks, registers push and identifies
    /// with a valid hash; it comes up; flush drains; the person is verified, the anonymous id an
    /// alias, every event on the timeline once, with one `$subscriber.merged`.
    func testOfflineFirstLaunchIsLinkedWhenTheNetworkReturns() async throws {
        let server = try SDKServer.withTenant()
        server.stop()
        let device = server.device()
        let anonymous = device.anonymousId
        for index in 0..<30 { device.track("onboarding_step", properties: ["n": .int(index)]) }
        device.setPushToken("apns-offline", permission: .authorized)
        device.identify("user_offline", email: "ada@example.com", identityHash: server.identityHash("user_offline"))
        for index in 0..<10 { device.track("after_login", properties: ["n": .int(index)]) }
        let stillOffline = await device.flush(timeout: .milliseconds(300))
        XCTAssertFalse(stillOffline, "nothing can drain while the server is down")

        try server.start()
        let drained = await device.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        let (person, _) = try XCTUnwrap(server.subscriber("user_offline"))
        XCTAssertEqual(person["verified"] as? Bool, true)
        XCTAssertEqual(person["aliases"] as? [String], [anonymous])
        let push = person["pushSubscriptions"] as? [[String: Any]] ?? []
        XCTAssertEqual(push.map { $0["deviceId"] as? String }, [device.deviceId])
        XCTAssertEqual((person["attributes"] as? [String: Any])?["$notificationPermission"] as? String, "authorized")
        let (_, metadata) = try XCTUnwrap(server.subscriber(anonymous))
        XCTAssertNotNil(metadata["resolvedFrom"], "the anonymous id still reaches the person")

        let timeline = try server.timeline("user_offline")
        XCTAssertEqual(timeline.merges.count, 1)
        // The sign-in reached the server first: a link, then every event through the alias.
        XCTAssertEqual(timeline.first?["name"] as? String, "$subscriber.merged")
        XCTAssertEqual((timeline.first?["properties"] as? [String: Any])?["shape"] as? String, "link")
        XCTAssertEqual(timeline.appEvents.count, 40)
        XCTAssertEqual(Set(timeline.appEvents.ids).count, 40, "every event once")
        XCTAssertEqual(
            timeline.appEvents.names,
            Array(repeating: "onboarding_step", count: 30) + Array(repeating: "after_login", count: 10))
        XCTAssertEqual(device.queueStatus.rejectedOperations, 0)
    }

    /// Killed app: a child process queues 200 events with the server down and is SIGKILLed;
    /// relaunched on the same storage, the app delivers all 200 exactly once.
    func testEventsQueuedByAKilledAppAreDeliveredOnceAfterRelaunch() async throws {
        let server = try SDKServer.withTenant()
        server.stop()
        let storage = server.directory.appendingPathComponent("killed-device")
        let example = URL(fileURLWithPath: TestServer.binaryPath).deletingLastPathComponent()
            .appendingPathComponent("buzzkit-example")
        let child = Process()
        child.executableURL = example
        child.arguments = [
            "enqueue", "--count", "200", "--base-url", server.baseURL.absoluteString, "--client-key",
            server.tenant.clientKey, "--storage", storage.path,
        ]
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, !text.contains("queued 200") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty && !child.isRunning { break }
            text += String(decoding: data, as: UTF8.self)
        }
        XCTAssertTrue(text.contains("queued 200"), text)
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        XCTAssertEqual(child.terminationReason, .uncaughtSignal)
        let anonymous = try XCTUnwrap(
            text.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })

        try server.start()
        let relaunched = server.device(storage: storage)
        XCTAssertEqual(relaunched.anonymousId, anonymous, "the relaunched app is the same device")
        let drained = await relaunched.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        let timeline = try server.timeline(anonymous)
        XCTAssertEqual(timeline.count, 200)
        XCTAssertEqual(Set(timeline.ids).count, 200)
        XCTAssertEqual(timeline.compactMap { ($0["properties"] as? [String: Any])?["n"] as? Int }, Array(0..<200))
    }

    /// Server killed mid-flush: SIGKILLed and restarted while 1,000 events are in flight; all
    /// arrive, none twice. The hard case is forced, not hoped for: the server commits a batch and
    /// dies before the device hears of it, so the device must send that batch again, to the
    /// restarted server, which must store it once.
    func testServerKilledMidFlushLosesAndDuplicatesNothing() async throws {
        let server = try SDKServer.withTenant()
        // Ten batches of 100 through the proxy: the fourth is stored, its answer lost, and at that
        // moment the server is SIGKILLed and restarted on the same port and database.
        let proxy = try AnswerLosingProxy(upstreamPort: server.port, losingEventsRequest: 4) {
            server.kill()
            try server.start()
        }
        defer { proxy.stop() }
        // On Linux curl first resends the lost request itself, on a fresh connection but without its
        // body; that try stalls until the request timeout (5 s here), then the SDK sends the batch again.
        let device = server.device(baseURL: proxy.baseURL) { $0.maxBatchSize = 100 }
        device.identify("user_crash", identityHash: server.identityHash("user_crash"))
        for index in 0..<1000 { device.track("burst", properties: ["n": .int(index)]) }
        XCTAssertEqual(device.queueStatus.queuedEvents, 1000, "all 1,000 tracked before anything is sent")
        proxy.start()
        let drained = await device.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        XCTAssertNil(proxy.lossFailure, "the server restarted")

        let batches = proxy.exchanges.filter { $0.line == "POST /v1/events" }
        let lostIndex = try XCTUnwrap(batches.firstIndex { !$0.relayed }, "one answer was lost")
        XCTAssertEqual(lostIndex, 3, "delivery had started: three batches acknowledged before the kill")
        let lost = batches[lostIndex]
        XCTAssertTrue((200..<300).contains(lost.status), "the server stored the batch whose answer was lost")
        let key = try XCTUnwrap(lost.idempotencyKey)
        let resent = batches.filter { $0.idempotencyKey == key && $0.relayed }
        XCTAssertEqual(resent.count, 1, "the device sent the lost batch again")
        XCTAssertEqual(resent.first?.replayed, true, "the restarted server answered from the key it had kept")
        XCTAssertEqual(Set(batches.compactMap(\.idempotencyKey)).count, 10)
        XCTAssertEqual(batches.count, 11, "work was still in flight when the server died: six batches after it")

        let timeline = try server.timeline("user_crash").appEvents
        XCTAssertEqual(timeline.count, 1000)
        XCTAssertEqual(Set(timeline.ids).count, 1000, "none twice")
        XCTAssertEqual(
            timeline.compactMap { ($0["properties"] as? [String: Any])?["n"] as? Int }, Array(0..<1000), "in order")
        XCTAssertEqual(device.queueStatus.rejectedOperations, 0)
    }

    /// Logout on a shared phone: the previous user keeps no push subscription from this device,
    /// the new anonymous subscriber has it, and the new anonymous id differs from every earlier one.
    func testLogoutOnASharedPhoneMovesThePushSubscriptionToAFreshAnonymousId() async throws {
        let server = try SDKServer.withTenant()
        let phone = server.device()
        var anonymousIds = [phone.anonymousId]
        phone.setPushToken("apns-shared", permission: .authorized)
        phone.identify("alice", identityHash: server.identityHash("alice"))
        phone.track("alice_reads")
        phone.logout()
        anonymousIds.append(phone.anonymousId)
        phone.track("guest_browses")
        var drained = await phone.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)

        let (alice, _) = try XCTUnwrap(server.subscriber("alice"))
        XCTAssertEqual((alice["pushSubscriptions"] as? [[String: Any]])?.count, 0, "alice gets no more pushes here")
        XCTAssertTrue(try server.timeline("alice").names.contains("alice_reads"), "queued before logout: alice's")
        let (guest, _) = try XCTUnwrap(server.subscriber(anonymousIds[1]))
        XCTAssertEqual(guest["anonymous"] as? Bool, true)
        XCTAssertEqual(
            (guest["pushSubscriptions"] as? [[String: Any]])?.compactMap { $0["token"] as? String }, ["apns-shared"])
        XCTAssertEqual(try server.timeline(anonymousIds[1]).names, ["guest_browses"])

        // Bob signs in on the same phone, then out again: a third anonymous id, never an earlier one.
        phone.identify("bob", identityHash: server.identityHash("bob"))
        phone.logout()
        anonymousIds.append(phone.anonymousId)
        drained = await phone.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        XCTAssertEqual(Set(anonymousIds).count, 3)
        let (bob, _) = try XCTUnwrap(server.subscriber("bob"))
        XCTAssertEqual((bob["pushSubscriptions"] as? [[String: Any]])?.count, 0)
        XCTAssertEqual(bob["aliases"] as? [String], [anonymousIds[1]], "the guest's history joined bob")
        let (last, _) = try XCTUnwrap(server.subscriber(anonymousIds[2]))
        XCTAssertEqual((last["pushSubscriptions"] as? [[String: Any]])?.count, 1)
    }

    /// Two devices, one person: the first sign-up renames its anonymous subscriber, the second
    /// device is absorbed; both anonymous histories end on the person.
    func testTwoDevicesEndOnOnePersonByARenameAndAnAbsorb() async throws {
        let server = try SDKServer.withTenant()
        let phone = server.device()
        let tablet = server.device()
        phone.track("phone_onboarding")
        var drained = await phone.flush(timeout: .seconds(30))
        XCTAssertTrue(drained, "the phone's anonymous subscriber exists before the sign-up")
        phone.identify("user_two", identityHash: server.identityHash("user_two"))
        drained = await phone.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        tablet.track("tablet_onboarding")
        tablet.setPushToken("apns-tablet", permission: .provisional)
        tablet.setPreferences(["news": false])
        drained = await tablet.flush(timeout: .seconds(30))
        XCTAssertTrue(drained, "the tablet is an anonymous subscriber of its own first")
        tablet.identify("user_two", identityHash: server.identityHash("user_two"))
        tablet.track("tablet_after_login")
        drained = await tablet.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)

        let (person, _) = try XCTUnwrap(server.subscriber("user_two"))
        XCTAssertEqual(Set(person["aliases"] as? [String] ?? []), [phone.anonymousId, tablet.anonymousId])
        XCTAssertEqual(
            (person["pushSubscriptions"] as? [[String: Any]])?.compactMap { $0["deviceId"] as? String },
            [tablet.deviceId])
        XCTAssertEqual(
            ((person["preferences"] as? [String: Any])?["news"] as? [String: Any])?["subscribed"] as? Bool, false)
        let timeline = try server.timeline("user_two")
        let shapes = timeline.merges.compactMap { ($0["properties"] as? [String: Any])?["shape"] as? String }
        XCTAssertEqual(shapes, ["rename", "absorb"])
        XCTAssertEqual(
            Set(timeline.appEvents.names), ["phone_onboarding", "tablet_onboarding", "tablet_after_login"])
        XCTAssertEqual(timeline.appEvents.count, 3)
        let devices = (person["devices"] as? [[String: Any]] ?? []).compactMap { $0["deviceId"] as? String }
        XCTAssertEqual(Set(devices), [phone.deviceId, tablet.deviceId], "device context sent on identify")
    }
}

/// The proof goes with every call: a tenant that requires verification accepts all of a device's
/// calls made with an identity token, and none is refused.
final class SDKVerificationTests: XCTestCase {
    func testWithRequiredVerificationEveryCallCarriesTheToken() async throws {
        let server = try SDKServer.withTenant()
        let settings = try HTTPClient(port: server.port).send(
            "PATCH", "/v1/tenant", json: ["requireVerification": true], headers: server.tenant.backend)
        XCTAssertEqual(settings.status, 200, settings.text)
        let device = server.device()
        let token = TestTokens.valid(
            subject: "user_jwt", nowMillis: Int64(Date().timeIntervalSince1970 * 1000),
            secret: server.tenant.identitySecret)
        device.identify("user_jwt", identityToken: token, subscribe: [.email: false])
        device.track("verified_event", properties: ["ok": true])
        device.setAttributes(["plan": "pro"])
        device.setPreferences(["news": true])
        device.setPushToken("apns-jwt", permission: .authorized)
        let drained = await device.flush(timeout: .seconds(30))
        XCTAssertTrue(drained)
        XCTAssertEqual(device.queueStatus.rejectedOperations, 0, "no call was refused for want of a proof")
        let (person, _) = try XCTUnwrap(server.subscriber("user_jwt"))
        XCTAssertEqual(person["verified"] as? Bool, true)
        XCTAssertEqual((person["attributes"] as? [String: Any])?["plan"] as? String, "pro")
        XCTAssertEqual((person["pushSubscriptions"] as? [[String: Any]])?.count, 1)
        XCTAssertEqual(try server.timeline("user_jwt").appEvents.names, ["verified_event"])
    }
}

/// Polls `condition` every 5 ms until it holds or `seconds` pass.
func eventuallyTrue(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}
