import JSON

/// The shapes of API.md §6.
package enum MergeShape: String, Sendable {
    /// A new external id: the anonymous row is renamed, nothing moves.
    case rename
    /// An existing external id: the anonymous subscriber is folded in and retired.
    case absorb
    /// A never-seen anonymous id: it becomes an alias of the external id.
    case link
    case none
}

/// What a merge did.
package struct MergeResult: Sendable {
    package var shape: MergeShape
    package var from: String?
    package var eventsMoved: Int
    /// Why nothing was merged, when the shape is `.none` for a reason other than a retry or no
    /// anonymous id at all.
    package var refusal: MergeRefusal?

    /// The refusal as identify reports it.
    package var warnings: [IdentityWarning] { refusal.map { [$0.warning] } ?? [] }

    /// The `$subscriber.merged` event's properties, `{"from":…,"shape":…,"eventsMoved":n}`
    /// (API.md §6), written straight to bytes: through a `JSONObject` they were ~2k instructions
    /// of the writer thread, on every merge.
    var markerPropertiesJSON: String {
        let from = from ?? ""
        var out = JSONWriter(capacity: 48 + from.utf8.count)
        out.literal(#"{"from":"#)
        out.string(from)
        out.literal(#","shape":"#)
        out.string(shape.rawValue)
        out.literal(#","eventsMoved":"#)
        out.integer(Int64(eventsMoved))
        out.append(UInt8(ascii: "}"))
        return out.withBytes { String(decoding: $0, as: UTF8.self) }
    }
}

/// Folding an anonymous id into an identified subscriber, inside one write transaction.
package enum Merger {
    /// Most push subscriptions a subscriber keeps; registering the 21st evicts the least recently seen.
    package static let maxPushSubscriptions = 20

    /// Merges `anonymousID` into the person `externalID`, creating that person when needed.
    /// - Returns: the identified subscriber after the merge, and what happened.
    package static func merge(
        anonymousID: String?, into externalID: String, existing: SubscriberRecord?,
        tenant: TenantRecord, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> (SubscriberRecord, MergeResult) {
        let (target, result, unsaved) = try mergeUnsaved(
            anonymousID: anonymousID, into: externalID, existing: existing, tenant: tenant, in: ctx, now: now)
        if unsaved { try ctx.updateSubscriber(target) }
        return (target, result)
    }

    /// `merge` without its final UPDATE of the identified row: identify folds the proof and the
    /// profile into the same record and saves it once (issue 14: one UPDATE per row per identify).
    /// - Returns: also whether the record differs from its row and must be saved.
    static func mergeUnsaved(
        anonymousID: String?, into externalID: String, existing: SubscriberRecord?,
        tenant: TenantRecord, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> (SubscriberRecord, MergeResult, unsaved: Bool) {
        var noMerge = MergeResult(shape: .none, from: anonymousID, eventsMoved: 0)
        guard let anonymousID else {
            noMerge.from = nil
            return (
                try existing ?? ctx.insertSubscriber(tenantID: tenant.id, id: externalID, anonymous: false, now: now),
                noMerge, false
            )
        }
        /// No merge, and why: the identify still goes on for the external id.
        func refuse(_ refusal: MergeRefusal) throws -> (SubscriberRecord, MergeResult, unsaved: Bool) {
            noMerge.refusal = refusal
            return (
                try existing ?? ctx.insertSubscriber(tenantID: tenant.id, id: externalID, anonymous: false, now: now),
                noMerge, false
            )
        }
        let maxAliases = tenant.settings.maxAliases
        // Ids the person has before this merge (a new person will have just the external id),
        // counted only once a merge is due: a retry, every launch, must not pay for the count.
        func targetIDs() throws -> Int { try existing.map { try ctx.aliasCount(key: $0.key) } ?? 1 }

        var target: SubscriberRecord
        var result = MergeResult(shape: .link, from: anonymousID, eventsMoved: 0)
        if var source = try ctx.subscriber(tenantID: tenant.id, alias: anonymousID) {
            if let existing, source.key == existing.key {
                return (existing, noMerge, false)  // a retry: already an alias of this person
            }
            guard source.anonymous else { return try refuse(.sourceIdentified(anonymousID: anonymousID)) }
            guard try targetIDs() + ctx.aliasCount(key: source.key) <= maxAliases else {
                return try refuse(.aliasLimitReached(anonymousID: anonymousID, limit: maxAliases))
            }
            if var existing {
                result.shape = .absorb
                result.eventsMoved = try absorb(&source, into: &existing, tenant: tenant, in: ctx)
                target = existing
            } else {
                result.shape = .rename
                source.id = externalID
                source.anonymous = false
                try ctx.addAlias(tenantID: tenant.id, alias: externalID, key: source.key)
                target = source
            }
        } else {
            guard try targetIDs() + 1 <= maxAliases else {
                return try refuse(.aliasLimitReached(anonymousID: anonymousID, limit: maxAliases))
            }
            target =
                try existing ?? ctx.insertSubscriber(tenantID: tenant.id, id: externalID, anonymous: false, now: now)
            try ctx.addAlias(tenantID: tenant.id, alias: anonymousID, key: target.key)
        }

        let marker = NewEvent(
            clientID: "$subscriber.merged:\(anonymousID)", name: "$subscriber.merged", timestamp: now,
            receivedAt: now, propertiesJSON: result.markerPropertiesJSON)
        if try ctx.insertEvent(key: target.key, seq: target.lastSeq + 1, marker) {
            target.lastSeq += 1
            target.eventCount += 1
        }
        target.updatedAt = now
        try WebhookOutbox.record(
            .subscriberMerged,
            [
                "subscriberId": .string(target.id), "from": .string(anonymousID),
                "shape": .string(result.shape.rawValue), "eventsMoved": .number(String(result.eventsMoved)),
            ], tenantID: tenant.id, in: ctx, now: now)
        return (target, result, true)
    }

    /// Moves everything of `source` onto `target` and retires `source`. Returns events moved.
    private static func absorb(
        _ source: inout SubscriberRecord, into target: inout SubscriberRecord, tenant: TenantRecord,
        in ctx: any IdentityWriteContext
    ) throws -> Int {
        let moved = try ctx.copyEvents(from: source.key, to: target.key, afterSeq: target.lastSeq)
        target.lastSeq += Int64(moved)
        target.eventCount += Int64(moved)

        try ctx.movePushSubscriptions(from: source.key, to: target.key)
        _ = try ctx.evictPushSubscriptions(key: target.key, keep: maxPushSubscriptions)

        let targetPreferences = Dictionary(
            try ctx.preferences(key: target.key).map { ($0.topic, $0) }, uniquingKeysWith: { a, _ in a })
        for preference in try ctx.preferences(key: source.key) {
            if let mine = targetPreferences[preference.topic], mine.updatedAt >= preference.updatedAt { continue }
            try ctx.writePreference(key: target.key, preference)
        }

        let fill = AttributeMerge.fillIn(
            target: try ctx.attributes(key: target.key), source: try ctx.attributes(key: source.key),
            maxKeys: tenant.settings.attributeLimits.maxKeys)
        if !fill.isEmpty { try ctx.writeAttributes(key: target.key, fill) }
        if target.email == nil, let email = source.email {
            target.email = email
            target.emailSubscribed = source.emailSubscribed
        }

        for device in try ctx.devices(key: source.key) {
            try ctx.upsertDevice(key: target.key, device)
        }
        try ctx.reassignAliases(from: source.key, to: target.key)
        // Not deleteSubscriber: its events (all copied above) go later, off this transaction.
        try ctx.retireSubscriber(key: source.key)
        return moved
    }
}
