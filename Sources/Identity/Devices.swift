import JSON

/// A push registration request (`PUT …/push-subscriptions/{deviceId}`), validated.
package struct PushRegistration: Sendable {
    package var deviceID: String
    package var token: String
    package var platform: String
    /// The OS notification permission; kept as `$notificationPermission`.
    package var permission: String?
    package var device: DeviceRecord?

    package init(deviceID: String, token: String, platform: String, permission: String?, device: DeviceRecord?) {
        self.deviceID = deviceID
        self.token = token
        self.platform = platform
        self.permission = permission
        self.device = device
    }

    /// Platforms a token can belong to.
    package static let platforms: Set<String> = ["ios", "android", "web", "macos"]
    /// Permission values the iOS SDK reports.
    package static let permissions: Set<String> = ["authorized", "denied", "provisional", "ephemeral", "notDetermined"]
}

extension Operations {
    /// Registers the device on the subscriber; the device and its token leave whoever had them.
    package static func registerPush(
        _ registration: PushRegistration, subscriberID: SubscriberID, caller: Caller, in ctx: any IdentityWriteContext,
        now: Timestamp
    ) throws -> OperationResult {
        guard var subscriber = try Access.resolve(subscriberID, caller: caller, in: ctx, now: now, create: true) else {
            throw IdentityError.subscriberNotFound
        }
        try WebhookOutbox.pushMoves(
            registration, to: subscriber, tenantID: caller.tenant.id, in: ctx, now: now)
        try ctx.upsertPushSubscription(
            tenantID: caller.tenant.id, key: subscriber.key, deviceID: registration.deviceID,
            token: registration.token, platform: registration.platform, now: now)
        _ = try ctx.evictPushSubscriptions(key: subscriber.key, keep: Merger.maxPushSubscriptions)
        if let permission = registration.permission {
            let stored = try ctx.attributes(key: subscriber.key).first { $0.name == "$notificationPermission" }
            if stored?.entry.value != .string(permission) {
                try ctx.writeAttributes(
                    key: subscriber.key,
                    [("$notificationPermission", AttributeEntry(value: .string(permission), setByBackend: false))])
            }
        }
        var device = registration.device ?? DeviceRecord(deviceID: registration.deviceID, lastSeenAt: now)
        device.deviceID = registration.deviceID
        device.platform = device.platform ?? registration.platform
        device.lastSeenAt = now
        try ctx.upsertDevice(key: subscriber.key, device)
        subscriber.updatedAt = now
        try ctx.updateSubscriber(subscriber)
        return OperationResult(subscriber: subscriber)
    }

    /// Logout: removes the device's subscription. Removing what is not there is not an error.
    package static func unregisterPush(
        deviceID: String, subscriberID: SubscriberID, caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> Bool {
        guard let subscriber = try Access.resolve(subscriberID, caller: caller, in: ctx, now: now, create: false) else {
            return false
        }
        return try ctx.deletePushSubscription(tenantID: caller.tenant.id, key: subscriber.key, deviceID: deviceID)
    }

    /// `PUT …/preferences`: each topic choice stamped with the time it was made.
    package static func setPreferences(
        _ topics: [(topic: String, subscribed: Bool)], subscriberID: SubscriberID, caller: Caller,
        in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> OperationResult {
        guard var subscriber = try Access.resolve(subscriberID, caller: caller, in: ctx, now: now, create: true) else {
            throw IdentityError.subscriberNotFound
        }
        let stored = Dictionary(
            try ctx.preferences(key: subscriber.key).map { ($0.topic, $0.subscribed) }, uniquingKeysWith: { a, _ in a })
        var changed = false
        for (topic, subscribed) in topics where stored[topic] != subscribed {
            try ctx.writePreference(
                key: subscriber.key, PreferenceRecord(topic: topic, subscribed: subscribed, updatedAt: now))
            changed = true
        }
        if changed {
            subscriber.updatedAt = now
            try ctx.updateSubscriber(subscriber)
        }
        return OperationResult(subscriber: subscriber)
    }
}
