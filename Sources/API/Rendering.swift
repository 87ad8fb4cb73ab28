import Identity
import JSON

/// How domain values look on the wire (API.md §4): camelCase, RFC 3339 times with milliseconds.
enum Rendering {
    static func subscriber(_ s: SubscriberSnapshot) -> JSONValue {
        let r = s.record
        var attributes = JSONObject()
        // Who set each attribute: the app may never remove what the backend set (API.md §7),
        // and the dashboard shows which is which.
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
        return .object([
            "id": .string(r.id),
            "anonymous": .bool(r.anonymous),
            "verified": .bool(r.verified),
            "email": r.email.map(JSONValue.string) ?? .null,
            "attributes": .object(attributes),
            "attributeSources": .object(sources),
            "channels": .object(channels),
            "aliases": .array(s.aliases.map(JSONValue.string)),
            "pushSubscriptions": .array(s.pushSubscriptions.map(pushSubscription)),
            "preferences": .object(preferences),
            "devices": .array(s.devices.map(device)),
            "eventCount": integer(r.eventCount),
            "createdAt": time(r.createdAt),
            "updatedAt": time(r.updatedAt),
        ])
    }

    /// `{"subscriber": …}` as bytes: the snapshot's own JSON is made once per snapshot and kept
    /// with it, so a cached snapshot served many times is not rendered again.
    static func subscriberData(_ s: SubscriberSnapshot) -> [UInt8] {
        // Kept whole, `{"subscriber":…}`: a cached GET sends these very bytes, copied nowhere.
        s.rendered {
            var bytes: [UInt8] = []
            bytes.append(contentsOf: #"{"subscriber":"#.utf8)
            subscriber(s).serialize(into: &bytes)
            bytes.append(UInt8(ascii: "}"))
            return bytes
        }
    }

    static func pushSubscription(_ p: PushSubscriptionRecord) -> JSONValue {
        .object([
            "deviceId": .string(p.deviceID), "token": .string(p.token), "platform": .string(p.platform),
            "createdAt": time(p.createdAt), "updatedAt": time(p.updatedAt),
        ])
    }

    static func device(_ d: DeviceRecord) -> JSONValue {
        var object: JSONObject = ["deviceId": .string(d.deviceID)]
        let fields: [(String, String?)] = [
            ("platform", d.platform), ("appVersion", d.appVersion), ("osVersion", d.osVersion), ("model", d.model),
            ("locale", d.locale), ("timeZone", d.timeZone),
        ]
        for (name, value) in fields { object[name] = value.map(JSONValue.string) ?? .null }
        object["lastSeenAt"] = time(d.lastSeenAt)
        return .object(object)
    }

    /// A stored event. Properties were validated JSON when stored: text that no longer parses is
    /// a damaged row, answered as a 500 (and logged), not shown as `{}`.
    static func event(_ e: EventRecord) throws(StoredValueError) -> JSONValue {
        var properties: JSONValue = .object([:])
        if let text = e.event.propertiesJSON {
            guard let parsed = try? JSONParser.parse(Array(text.utf8), maxDepth: 64) else {
                throw StoredValueError(what: "properties of event seq \(e.seq)")
            }
            properties = parsed
        }
        return .object([
            "seq": integer(e.seq), "id": .string(e.event.clientID), "name": .string(e.event.name),
            "timestamp": time(e.event.timestamp), "receivedAt": time(e.event.receivedAt), "properties": properties,
        ])
    }

    static func merge(_ m: MergeResult) -> JSONValue {
        var object: JSONObject = ["shape": .string(m.shape.rawValue)]
        if let from = m.from, m.shape != .none { object["from"] = .string(from) }
        return .object(object)
    }

    static func time(_ t: Timestamp) -> JSONValue { .string(t.rfc3339) }
    static func integer<T: BinaryInteger>(_ n: T) -> JSONValue { .number(String(n)) }
}

/// A stored value that does not read as what was stored (a damaged row); names it, not its content.
struct StoredValueError: Error, CustomStringConvertible {
    var what: String
    var description: String { "stored value does not parse: \(what)" }
}
