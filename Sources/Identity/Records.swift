import JSON

/// A subscriber row. `key` is internal and immutable; `id` is the public id, which a rename changes.
package struct SubscriberRecord: Sendable, Equatable {
    // `id`, `anonymous` and `verified` first: a cached GET reads them (and the snapshot's
    // rendering) from a snapshot no recent request touched, and in the snapshot's first cache
    // line they cost no miss of their own (bench/get-cache-misses.sh).
    package var id: String
    package var anonymous: Bool
    package var verified: Bool
    package var key: Int64
    package var tenantID: String
    package var email: String?
    package var emailSubscribed: Bool
    /// The highest `seq` handed out on this timeline; the next event gets `lastSeq + 1`.
    package var lastSeq: Int64
    package var eventCount: Int64
    package var createdAt: Timestamp
    package var updatedAt: Timestamp

    package init(
        key: Int64, tenantID: String, id: String, anonymous: Bool, verified: Bool = false,
        email: String? = nil, emailSubscribed: Bool = false, lastSeq: Int64 = 0,
        eventCount: Int64 = 0, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        self.key = key
        self.tenantID = tenantID
        self.id = id
        self.anonymous = anonymous
        self.verified = verified
        self.email = email
        self.emailSubscribed = emailSubscribed
        self.lastSeq = lastSeq
        self.eventCount = eventCount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One stored attribute and who set it: the app may never remove what the backend set (§7).
package struct AttributeEntry: Sendable, Equatable {
    package var value: JSONValue
    package var setByBackend: Bool
    package init(value: JSONValue, setByBackend: Bool) {
        self.value = value
        self.setByBackend = setByBackend
    }
}

/// A device's push registration. A device id and a token each belong to one subscriber at a time.
package struct PushSubscriptionRecord: Sendable, Equatable {
    package var deviceID: String
    package var token: String
    package var platform: String
    package var createdAt: Timestamp
    package var updatedAt: Timestamp
    package init(deviceID: String, token: String, platform: String, createdAt: Timestamp, updatedAt: Timestamp) {
        self.deviceID = deviceID
        self.token = token
        self.platform = platform
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A topic choice and when it was made; merges keep the newer one.
package struct PreferenceRecord: Sendable, Equatable {
    package var topic: String
    package var subscribed: Bool
    package var updatedAt: Timestamp
    package init(topic: String, subscribed: Bool, updatedAt: Timestamp) {
        self.topic = topic
        self.subscribed = subscribed
        self.updatedAt = updatedAt
    }
}

/// The context a device last reported. Nil fields were never reported; an absent field in a
/// new report never overwrites a stored one.
package struct DeviceRecord: Sendable, Equatable {
    package var deviceID: String
    package var platform: String?
    package var appVersion: String?
    package var osVersion: String?
    package var model: String?
    package var locale: String?
    package var timeZone: String?
    package var lastSeenAt: Timestamp

    package init(
        deviceID: String, platform: String? = nil, appVersion: String? = nil, osVersion: String? = nil,
        model: String? = nil, locale: String? = nil, timeZone: String? = nil, lastSeenAt: Timestamp
    ) {
        self.deviceID = deviceID
        self.platform = platform
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.model = model
        self.locale = locale
        self.timeZone = timeZone
        self.lastSeenAt = lastSeenAt
    }

    /// The names of the optional context fields, as in the API.
    package static let contextFields = ["platform", "appVersion", "osVersion", "model", "locale", "timeZone"]
}

/// An event to store: the client's id is its idempotency key per subscriber.
package struct NewEvent: Sendable, Equatable {
    package var clientID: String
    package var name: String
    package var timestamp: Timestamp
    package var receivedAt: Timestamp
    /// Properties as compact JSON text, already validated.
    package var propertiesJSON: String?
    package init(clientID: String, name: String, timestamp: Timestamp, receivedAt: Timestamp, propertiesJSON: String?) {
        self.clientID = clientID
        self.name = name
        self.timestamp = timestamp
        self.receivedAt = receivedAt
        self.propertiesJSON = propertiesJSON
    }
}

/// A stored event on a timeline.
package struct EventRecord: Sendable, Equatable {
    package var seq: Int64
    package var event: NewEvent
    package init(seq: Int64, event: NewEvent) {
        self.seq = seq
        self.event = event
    }
}
