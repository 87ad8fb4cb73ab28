import Foundation
import XCTest

@testable import BuzzKit

final class DeviceContextTests: XCTestCase {
    override func tearDown() {
        TemporaryFolders.shared.removeAll()
        super.tearDown()
    }

    /// A value the device cannot read (nil) or reads as nothing (empty, blanks) is left out of the
    /// `device` object of identify and of every push registration, never sent as an empty string:
    /// the server would keep "" over what it knew.
    func testAbsentAndEmptyValuesAreLeftOutOfIdentifyAndPushRegistration() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport) {
            $0.device = DeviceContext(
                platform: .android, appVersion: "", osVersion: "14", model: nil, locale: "  ",
                timeZone: "Europe/Paris")
        }
        client.setPushToken("fcm-token", permission: .authorized)
        client.identify("user_ctx", identityHash: "h")
        drain(client)

        let identify = transport.requests.filter { $0.line == "POST /v1/identify" }
        let push = transport.requests.filter { $0.method == "PUT" && $0.path.contains("/push-subscriptions/") }
        XCTAssertEqual(identify.count, 1)
        XCTAssertEqual(push.count, 2, "registered while anonymous, then again for the person")
        for request in identify + push {
            let device = try XCTUnwrap(request.json["device"] as? [String: Any], request.line)
            XCTAssertEqual(device.keys.sorted(), ["deviceId", "osVersion", "platform", "timeZone"], request.line)
            XCTAssertEqual(device["deviceId"] as? String, client.deviceId, request.line)
            XCTAssertEqual(device["platform"] as? String, "android", request.line)
            XCTAssertEqual(device["osVersion"] as? String, "14", request.line)
            XCTAssertEqual(device["timeZone"] as? String, "Europe/Paris", request.line)
        }
        for request in push {
            XCTAssertEqual(request.json["platform"] as? String, "android", request.line)
        }
    }

    /// What this process reads about its own device (here on Linux: no app bundle, so no app
    /// version) holds no empty value either.
    func testTheContextReadFromTheProcessHasNoEmptyValue() throws {
        guard case .object(let device) = DeviceContext.current(platform: .web).json(deviceId: "dev_1") else {
            return XCTFail("the device context is an object")
        }
        XCTAssertEqual(device["deviceId"], "dev_1")
        XCTAssertEqual(device["platform"], "web")
        for (key, value) in device {
            guard case .string(let text) = value else { return XCTFail("\(key) is not a string: \(value)") }
            XCTAssertFalse(text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, key)
        }
    }
}
