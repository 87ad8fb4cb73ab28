import BuzzKit
import Foundation
import XCTest

/// The calls of API.md §16 exactly as an app writes them, on the shared client.
final class SharedClientTests: XCTestCase {
    func testTheModuleLevelCallsAreTheContractsOwn() async throws {
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-sdk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: storage) }
        XCTAssertEqual(BuzzKit.anonymousId, "", "nothing before configure")
        var configuration = BuzzKit.Configuration()
        configuration.log = { _ in }
        // Nobody listens on the discard port: everything stays queued.
        BuzzKit.configure(
            clientKey: "bk_client_test", baseURL: URL(string: "http://127.0.0.1:9")!, storageDirectory: storage,
            configuration: configuration)
        let first = BuzzKit.anonymousId
        XCTAssertNotNil(first.range(of: "^anon_[A-Za-z0-9_-]{21}$", options: .regularExpression))
        XCTAssertNil(BuzzKit.externalId)
        BuzzKit.identify("user_42", email: "ada@example.com", identityHash: "hash", attributes: ["plan": "trial"])
        BuzzKit.identify("user_42", identityToken: "jwt", subscribe: [.email: false])
        BuzzKit.setAttributes(["plan": "pro", "streak": 4, "coach": "maya"])
        BuzzKit.track("onboarding_started", properties: ["step": 1])
        BuzzKit.setPushToken("apns-token", permission: .authorized)
        BuzzKit.setPreferences(["news": false])
        XCTAssertEqual(BuzzKit.externalId, "user_42")
        BuzzKit.logout()
        XCTAssertNil(BuzzKit.externalId)
        XCTAssertNotEqual(BuzzKit.anonymousId, first)
        let drained: Bool = await BuzzKit.flush(timeout: .milliseconds(50))
        XCTAssertFalse(drained, "offline: the queue keeps everything")
        let status = try XCTUnwrap(BuzzKit.sharedClient?.queueStatus)
        XCTAssertEqual(status.queuedEvents, 1)
        XCTAssertEqual(status.droppedEvents, 0)
        let _: BuzzKit.BuzzKitClient? = BuzzKit.sharedClient
        let _: BuzzKit.JSONValue = ["nested": [1, 2.5, nil, true]]
    }
}
