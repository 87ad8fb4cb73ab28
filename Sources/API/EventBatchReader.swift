import Identity
import JSON

/// `POST /v1/events` read straight from the body, without a JSON tree: the batch's subscriber
/// id and its events, or nil for anything but a valid batch of the usual shape. The controller
/// then takes the general path (parse, check, validate), which gives the precise error; so this
/// reader needs to be right only about what it accepts, and a test compares the two paths.
///
/// Per event it costs a third of the tree's parse, validation and destruction (callgrind).
enum EventBatchReader {
    static func read(_ body: [UInt8], receivedAt: Timestamp) -> (subscriberID: String, events: [NewEvent])? {
        JSONShapeReader.read(body, maxDepth: JSONLimits.maxDepth) { reader in
            guard reader.enterObject() else { return nil }
            var subscriberID: String?
            var events: [NewEvent]?
            while let key = reader.nextKey() {
                switch key {
                case "subscriberId" where subscriberID == nil:
                    subscriberID = reader.string()
                case "events" where events == nil:
                    events = readEvents(&reader, receivedAt: receivedAt)
                default:
                    return nil  // unknown or repeated: the general path says which
                }
                if reader.failed { return nil }
            }
            guard let subscriberID, let events else { return nil }
            return (subscriberID, events)
        }
    }

    private static func readEvents(_ reader: inout JSONShapeReader, receivedAt: Timestamp) -> [NewEvent]? {
        guard reader.enterArray() else { return nil }
        var events: [NewEvent] = []
        while reader.nextElement() {
            guard events.count < EventRules.maxBatch, let event = readEvent(&reader, receivedAt: receivedAt) else {
                return nil
            }
            events.append(event)
        }
        return reader.failed || events.isEmpty ? nil : events
    }

    private static func readEvent(_ reader: inout JSONShapeReader, receivedAt: Timestamp) -> NewEvent? {
        guard reader.enterObject() else { return nil }
        var id: String?
        var name: String?
        var timestamp: Timestamp?
        var properties: String?
        var seenTimestamp = false
        var seenProperties = false
        while let key = reader.nextKey() {
            switch key {
            case "id" where id == nil:
                guard let value = reader.string() else { return nil }
                id = value
            case "name" where name == nil:
                guard let value = reader.string() else { return nil }
                name = value
            case "timestamp" where !seenTimestamp:
                seenTimestamp = true
                if reader.null() { break }
                guard let text = reader.string(), let parsed = Timestamp(rfc3339: text) else { return nil }
                timestamp = parsed
            case "properties" where !seenProperties:
                seenProperties = true
                if reader.null() { break }
                var text = JSONWriter(capacity: 128)  // most fit: one allocation, not one per doubling
                guard reader.nextIsObject(), reader.compactValue(into: &text) else { return nil }
                properties = text.withBytes { String(decoding: $0, as: UTF8.self) }
            default:
                return nil
            }
        }
        guard !reader.failed, let id, let name, EventRules.idProblem(id) == nil, EventRules.nameProblem(name) == nil
        else { return nil }
        return NewEvent(
            clientID: id, name: name, timestamp: timestamp ?? receivedAt, receivedAt: receivedAt,
            propertiesJSON: properties)
    }
}
