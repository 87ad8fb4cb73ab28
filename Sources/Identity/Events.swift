import JSON

/// Event rules of API.md §8.
package enum EventRules {
    /// Most events one call may carry.
    package static let maxBatch = 500
    /// Longest event name and client id.
    package static let maxNameLength = 128
    package static let maxIDLength = 128

    /// Whether `text` has at most `limit` characters. A character takes at least one UTF-8 byte,
    /// so a text of at most `limit` bytes fits without counting characters, which walks the
    /// grapheme clusters (~360 instructions for a short id, twice per event).
    static func fits(_ text: String, _ limit: Int) -> Bool {
        text.utf8.count <= limit || text.count <= limit
    }
    /// `$` names the app may send; every other `$` name is the server's.
    package static let appSystemEvents: Set<String> = ["$session.start", "$session.end"]

    private static let idLengthRule = "'id' must be a string of 1 to \(maxIDLength) characters."
    private static let nameLengthRule = "'name' must be a string of 1 to \(maxNameLength) characters."

    /// Why `id` cannot be an event's client id, or nil when it can.
    package static func idProblem(_ id: String) -> String? {
        guard !id.isEmpty, fits(id, maxIDLength) else { return idLengthRule }
        // The server's own events ($subscriber.merged) use `$` ids; a client id there could
        // take one's place and suppress it.
        if id.utf8.first == UInt8(ascii: "$") { return "'id' values starting with $ belong to the server." }
        return nil
    }

    /// Why `name` cannot be an event's name, or nil when it can.
    package static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty, fits(name, maxNameLength) else { return nameLengthRule }
        if name.utf8.first == UInt8(ascii: "$") && !appSystemEvents.contains(name) {
            return "'\(name)': names starting with $ belong to the server."
        }
        return nil
    }

    /// Validates a whole batch before anything is stored (a batch is all or nothing).
    package static func validate(_ events: [JSONValue], receivedAt: Timestamp) throws(IdentityError) -> [NewEvent] {
        guard events.count <= maxBatch else {
            throw IdentityError(
                code: .batchTooLarge,
                message: "A call carries at most \(maxBatch) events; this one has \(events.count).")
        }
        guard !events.isEmpty else { throw .invalidRequest("'events' is empty.") }
        var result: [NewEvent] = []
        result.reserveCapacity(events.count)
        for (index, value) in events.enumerated() {
            func invalid(_ message: String) -> IdentityError {
                IdentityError(
                    code: .invalidEvent, message: "events[\(index)]: \(message)",
                    details: ["index": .number(String(index))])
            }
            guard let object = value.objectValue else { throw invalid("must be an object.") }
            // One pass over the members, then the checks in their fixed order: four lookups by
            // name (each a scan of the keys) cost more than the event's whole validation.
            var idValue: JSONValue?
            var nameValue: JSONValue?
            var timestampValue: JSONValue?
            var propertiesValue: JSONValue?
            var unknownKey: String?
            for (key, member) in object {
                switch key {
                case "id": idValue = member
                case "name": nameValue = member
                case "timestamp": timestampValue = member
                case "properties": propertiesValue = member
                default: if unknownKey == nil { unknownKey = key }
                }
            }
            guard let id = idValue?.stringValue else { throw invalid(idLengthRule) }
            if let problem = idProblem(id) { throw invalid(problem) }
            guard let name = nameValue?.stringValue else { throw invalid(nameLengthRule) }
            if let problem = nameProblem(name) { throw invalid(problem) }
            var timestamp = receivedAt
            if let raw = timestampValue, !raw.isNull {
                guard let text = raw.stringValue, let parsed = Timestamp(rfc3339: text) else {
                    throw invalid("'timestamp' must be an RFC 3339 date-time.")
                }
                timestamp = parsed
            }
            var properties: String?
            if let raw = propertiesValue, !raw.isNull {
                guard raw.objectValue != nil else { throw invalid("'properties' must be an object.") }
                properties = raw.jsonString
            }
            if let unknownKey { throw invalid("unknown field '\(unknownKey)'.") }
            result.append(
                NewEvent(
                    clientID: id, name: name, timestamp: timestamp, receivedAt: receivedAt, propertiesJSON: properties))
        }
        return result
    }
}

extension Operations {
    /// `POST /v1/events`: stores the batch on the subscriber (created when never seen).
    /// - Returns: how many were stored and how many were already there (same client id).
    package static func ingest(
        _ events: [NewEvent], subscriberID: SubscriberID, caller: Caller, in ctx: any IdentityWriteContext,
        now: Timestamp
    ) throws -> (accepted: Int, duplicates: Int) {
        guard var subscriber = try Access.resolve(subscriberID, caller: caller, in: ctx, now: now, create: true) else {
            throw IdentityError.subscriberNotFound
        }
        let accepted = try ctx.insertEvents(key: subscriber.key, afterSeq: subscriber.lastSeq, events)
        subscriber.lastSeq += Int64(accepted)
        if accepted > 0 {
            subscriber.eventCount += Int64(accepted)
            subscriber.updatedAt = now
            try ctx.updateSubscriber(subscriber)
        }
        return (accepted, events.count - accepted)
    }
}
