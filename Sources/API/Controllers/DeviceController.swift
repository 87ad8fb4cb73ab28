import HTTP1
import Identity
import JSON

/// Push subscriptions (login and logout) and topic preferences, from the app (API.md §5).
struct DeviceController {
    /// Longest device id, token, topic or device context field.
    static let maxFieldLength = 256
    /// Most topics one preferences call may set.
    static let maxTopics = 100

    var routes: [Route] {
        [
            Route(
                method: .PUT, path: "/v1/subscribers/:id/push-subscriptions/:deviceId", access: .app,
                operationID: "registerPushSubscription", handler: register),
            Route(
                method: .DELETE, path: "/v1/subscribers/:id/push-subscriptions/:deviceId", access: .app,
                operationID: "deletePushSubscription", handler: unregister),
            Route(
                method: .PUT, path: "/v1/subscribers/:id/preferences", access: .app, operationID: "updatePreferences",
                handler: preferences),
        ]
    }

    func register(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        let deviceID = try Self.field(try context.parameter("deviceId"), "deviceId")
        let body = try context.jsonBody()
        try body.allowOnly(["token", "platform", "permission", "device"])
        let token = try Self.field(try body.requireString("token"), "token")
        let platform = try body.requireString("platform")
        guard PushRegistration.platforms.contains(platform) else {
            throw APIError.invalidRequest(
                "'platform' must be one of \(PushRegistration.platforms.sorted().joined(separator: ", ")).")
        }
        let permission = try body.string("permission")
        if let permission, !PushRegistration.permissions.contains(permission) {
            throw APIError.invalidRequest(
                "'permission' must be one of \(PushRegistration.permissions.sorted().joined(separator: ", ")).")
        }
        let registration = PushRegistration(
            deviceID: deviceID, token: token, platform: platform, permission: permission,
            device: try Self.device(try body.object("device"), deviceID: deviceID, now: context.now))
        let now = context.now
        return .write { ctx in
            try SubscriberController.reply(
                try Operations.registerPush(registration, subscriberID: id, caller: caller, in: ctx, now: now), in: ctx)
        }
    }

    func unregister(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        let deviceID = try Self.field(try context.parameter("deviceId"), "deviceId")
        let now = context.now
        return .write { ctx in
            let deleted = try Operations.unregisterPush(
                deviceID: deviceID, subscriberID: id, caller: caller, in: ctx, now: now)
            return Reply(["deleted": .bool(deleted)])
        }
    }

    func preferences(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        let body = try context.jsonBody()
        try body.allowOnly(["topics"])
        guard let topics = try body.object("topics") else { throw APIError.invalidRequest("'topics' is required.") }
        guard topics.count <= Self.maxTopics else {
            throw APIError.invalidRequest("At most \(Self.maxTopics) topics a call.")
        }
        var choices: [(topic: String, subscribed: Bool)] = []
        for (topic, value) in topics {
            _ = try Self.field(topic, "topics key")
            guard let subscribed = value.boolValue else {
                throw APIError.invalidRequest("'topics.\(topic)' must be true or false.")
            }
            choices.append((topic, subscribed))
        }
        let now = context.now
        let chosen = choices
        return .write { ctx in
            try SubscriberController.reply(
                try Operations.setPreferences(chosen, subscriberID: id, caller: caller, in: ctx, now: now), in: ctx)
        }
    }

    /// A non-empty string of at most `maxFieldLength` characters without control characters.
    static func field(_ value: String, _ name: String) throws(APIError) -> String {
        guard !value.isEmpty, value.count <= maxFieldLength,
            !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw .invalidRequest("'\(name)' must be 1 to \(maxFieldLength) characters without control characters.")
        }
        return value
    }

    /// The fields a `device` object may have.
    private static let deviceFields = ["deviceId"] + DeviceRecord.contextFields

    /// Reads a `device` context object; `deviceID` from the path wins over the body's.
    static func device(_ object: JSONObject?, deviceID: String?, now: Timestamp) throws(APIError) -> DeviceRecord? {
        guard let object else { return nil }
        try object.allowOnly(deviceFields, path: "device.")
        let bodyID = try object.string("deviceId", path: "device.")
        guard let id = deviceID ?? bodyID else {
            throw .invalidRequest("'device.deviceId' is required.")
        }
        var values: [String: String] = [:]
        for name in DeviceRecord.contextFields {
            if let value = try object.string(name, path: "device.") {
                values[name] = try field(value, "device.\(name)")
            }
        }
        return DeviceRecord(
            deviceID: try field(id, "device.deviceId"), platform: values["platform"], appVersion: values["appVersion"],
            osVersion: values["osVersion"], model: values["model"], locale: values["locale"],
            timeZone: values["timeZone"], lastSeenAt: now)
    }
}
