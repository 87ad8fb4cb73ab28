import Identity
import JSON
import Testing

@testable import API

/// `allowOnly` refuses any field an endpoint does not define, by exact name: a typo, a
/// different case or a name that only starts like a defined one is an error, not ignored.
struct AllowedFieldsTests {
    private static let identifyFields = ["externalId", "anonymousId", "email", "attributes"]

    private func message(_ body: JSONObject, _ allowed: [String], path: String = "") -> String? {
        do {
            try body.allowOnly(allowed, path: path)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func definedFieldsPassInAnyOrderAndNumber() {
        #expect(message([:], Self.identifyFields) == nil)
        #expect(message(["externalId": .string("u")], Self.identifyFields) == nil)
        #expect(
            message(
                ["email": .string("a@b.co"), "externalId": .string("u"), "anonymousId": .null],
                Self.identifyFields) == nil)
    }

    @Test(arguments: ["externalid", "ExternalId", "external", "externalIdx", "email ", "", "émail"])
    func aNameThatIsNotExactlyDefinedIsRefusedByName(_ name: String) {
        let body: JSONObject = ["externalId": .string("u"), name: .number("1")]
        #expect(message(body, Self.identifyFields) == "Unknown field '\(name)'.")
    }

    @Test func aNestedObjectNamesItsPath() {
        #expect(message(["colour": .string("red")], ["deviceId"], path: "device.") == "Unknown field 'device.colour'.")
    }

    @Test func aDeviceObjectTakesItsIdAndEveryContextFieldAndNothingElse() throws {
        var device: JSONObject = ["deviceId": .string("d1")]
        for name in DeviceRecord.contextFields { device[name] = .string("x") }
        #expect(try DeviceController.device(device, deviceID: nil, now: Timestamp(millis: 0))?.deviceID == "d1")
        device["serial"] = .string("x")
        do {
            _ = try DeviceController.device(device, deviceID: nil, now: Timestamp(millis: 0))
            Issue.record("a device with an unknown field was taken")
        } catch {
            #expect(error.message == "Unknown field 'device.serial'.")
        }
    }
}
