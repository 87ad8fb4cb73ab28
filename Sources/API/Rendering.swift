import Identity
import JSON

/// How domain values look on the wire (API.md §4): camelCase, RFC 3339 times with milliseconds.
enum Rendering {
    /// A subscriber (API.md §4) as JSON text, written straight to bytes: building a `JSONValue`
    /// tree of it and serialising that cost ~40k instructions of an uncached GET (callgrind),
    /// about a third of the request. Members come out in the order of §4's example; a snapshot's
    /// attribute names and preference topics are unique (each a primary key), so each is one member.
    static func writeSubscriber(_ s: SubscriberSnapshot, into out: inout JSONWriter) {
        let r = s.record
        out.literal(#"{"id":"#)
        out.string(r.id)
        out.literal(#","anonymous":"#)
        out.bool(r.anonymous)
        out.literal(#","verified":"#)
        out.bool(r.verified)
        out.literal(#","email":"#)
        out.string(r.email)
        out.literal(#","attributes":{"#)
        out.elements(s.attributes) { out, attribute in
            out.key(attribute.name)
            out.value(attribute.entry.value)
        }
        // Who set each attribute: the app may never remove what the backend set (API.md §7),
        // and the dashboard shows which is which.
        out.literal(#"},"attributeSources":{"#)
        out.elements(s.attributes) { out, attribute in
            out.key(attribute.name)
            out.literal(attribute.entry.setByBackend ? #""backend""# : #""app""#)
        }
        out.literal(#"},"channels":{"#)
        if let email = r.email {
            out.literal(#""email":{"address":"#)
            out.string(email)
            out.literal(#","subscribed":"#)
            out.bool(r.emailSubscribed)
            out.literal("}")
        }
        out.literal(#"},"aliases":["#)
        out.elements(s.aliases) { out, alias in out.string(alias) }
        out.literal(#"],"pushSubscriptions":["#)
        out.elements(s.pushSubscriptions) { out, p in
            out.literal(#"{"deviceId":"#)
            out.string(p.deviceID)
            out.literal(#","token":"#)
            out.string(p.token)
            out.literal(#","platform":"#)
            out.string(p.platform)
            out.literal(#","createdAt":"#)
            out.time(p.createdAt)
            out.literal(#","updatedAt":"#)
            out.time(p.updatedAt)
            out.literal("}")
        }
        out.literal(#"],"preferences":{"#)
        out.elements(s.preferences) { out, p in
            out.key(p.topic)
            out.literal(#"{"subscribed":"#)
            out.bool(p.subscribed)
            out.literal(#","updatedAt":"#)
            out.time(p.updatedAt)
            out.literal("}")
        }
        out.literal(#"},"devices":["#)
        out.elements(s.devices) { out, d in
            out.literal(#"{"deviceId":"#)
            out.string(d.deviceID)
            out.literal(#","platform":"#)
            out.string(d.platform)
            out.literal(#","appVersion":"#)
            out.string(d.appVersion)
            out.literal(#","osVersion":"#)
            out.string(d.osVersion)
            out.literal(#","model":"#)
            out.string(d.model)
            out.literal(#","locale":"#)
            out.string(d.locale)
            out.literal(#","timeZone":"#)
            out.string(d.timeZone)
            out.literal(#","lastSeenAt":"#)
            out.time(d.lastSeenAt)
            out.literal("}")
        }
        out.literal(#"],"eventCount":"#)
        out.integer(r.eventCount)
        out.literal(#","createdAt":"#)
        out.time(r.createdAt)
        out.literal(#","updatedAt":"#)
        out.time(r.updatedAt)
        out.literal("}")
    }

    /// `{"subscriber":…}` as bytes: the snapshot's own JSON is made once per snapshot and kept
    /// with it, so a cached snapshot served many times is not rendered again.
    static func subscriberData(_ s: SubscriberSnapshot) -> [UInt8] {
        // Kept whole, `{"subscriber":…}`: a cached GET sends these very bytes, copied nowhere.
        s.rendered {
            var out = JSONWriter(capacity: 512)
            out.literal(#"{"subscriber":"#)
            writeSubscriber(s, into: &out)
            out.literal("}")
            return out.finish()
        }
    }

    /// `{"subscribers":[…],"nextCursor":…}`, a page of the list.
    static func subscriberPage(_ snapshots: [SubscriberSnapshot], nextCursor: String?) -> [UInt8] {
        var out = JSONWriter(capacity: 512 * snapshots.count + 64)
        out.literal(#"{"subscribers":["#)
        out.elements(snapshots) { out, snapshot in writeSubscriber(snapshot, into: &out) }
        out.literal(#"],"nextCursor":"#)
        out.string(nextCursor)
        out.literal("}")
        return out.finish()
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

extension JSONWriter {
    /// Each of `items` written by `write`, with commas between (the inside of `[…]` or `{…}`).
    /// Here, beside its callers, so each caller's sequence is specialised.
    mutating func elements<Items: Sequence>(_ items: Items, _ write: (inout JSONWriter, Items.Element) -> Void) {
        var first = true
        for item in items {
            if !first { append(UInt8(ascii: ",")) }
            first = false
            write(&self, item)
        }
    }

    /// RFC 3339 with milliseconds, as a JSON string (the text has nothing to escape).
    mutating func time(_ t: Timestamp) {
        append(UInt8(ascii: "\""))
        t.appendRFC3339(to: &self)
        append(UInt8(ascii: "\""))
    }
}

/// A stored value that does not read as what was stored (a damaged row); names it, not its content.
struct StoredValueError: Error, CustomStringConvertible {
    var what: String
    var description: String { "stored value does not parse: \(what)" }
}
