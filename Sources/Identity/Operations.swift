import JSON

/// `POST /v1/identify`, validated (API.md §6).
package struct IdentifyCommand: Sendable {
    package var externalID: String
    package var anonymousID: String?
    package var email: String?
    package var proof: IdentityProof?
    package var attributes: JSONObject?
    package var subscribeEmail: Bool?
    package var device: DeviceRecord?

    package init(
        externalID: String, anonymousID: String? = nil, email: String? = nil, proof: IdentityProof? = nil,
        attributes: JSONObject? = nil, subscribeEmail: Bool? = nil, device: DeviceRecord? = nil
    ) {
        self.externalID = externalID
        self.anonymousID = anonymousID
        self.email = email
        self.proof = proof
        self.attributes = attributes
        self.subscribeEmail = subscribeEmail
        self.device = device
    }
}

/// The subscriber an operation left behind, plus what it has to say.
package struct OperationResult: Sendable {
    package var subscriber: SubscriberRecord
    package var created = false
    package var merge: MergeResult?
    package var warnings: [IdentityWarning] = []
    package init(subscriber: SubscriberRecord) { self.subscriber = subscriber }
}

/// The domain operations. Each runs inside one write transaction handed in by the store, takes
/// the caller (tenant + role) as input and scopes everything by the caller's tenant.
package enum Operations {
    // MARK: - Identify and merge

    /// Identify: verify, merge the anonymous id, then upsert as the device (API.md §6).
    package static func identify(
        _ command: IdentifyCommand, caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> OperationResult {
        let tenant = caller.tenant
        let existing = try ctx.subscriber(tenantID: tenant.id, alias: command.externalID)
        var withProof = caller
        withProof.proof = command.proof ?? caller.proof
        let proven = try Access.authorize(
            withProof, externalID: command.externalID, everVerified: existing?.verified ?? false, now: now)

        // The merge, the proof and the profile each change the record; it is saved once, below.
        var (subscriber, merge, unsaved) = try Merger.mergeUnsaved(
            anonymousID: command.anonymousID, into: command.externalID, existing: existing,
            tenant: tenant, in: ctx, now: now)
        let created = existing == nil && merge.shape != .rename
        var warnings = merge.warnings

        if created { try WebhookOutbox.subscriberCreated(subscriber, in: ctx, now: now) }
        if proven && !subscriber.verified {
            subscriber.verified = true
            unsaved = true
            try WebhookOutbox.record(
                .subscriberVerified, ["subscriberId": .string(subscriber.id)], tenantID: tenant.id, in: ctx, now: now)
        }
        let profile = try mergeProfile(
            into: &subscriber, email: command.email, attributes: command.attributes,
            subscribeEmail: command.subscribeEmail, source: .app, tenant: tenant, in: ctx)
        warnings += profile.warnings
        if unsaved || profile.changed {
            subscriber.updatedAt = now
            try ctx.updateSubscriber(subscriber)
        }
        if let device = command.device {
            try ctx.upsertDevice(key: subscriber.key, device)
        }
        // Made last, taking the record as it ends: made first and updated, it copied the record
        // twice (a retain and a release of each of its strings every time).
        var result = OperationResult(subscriber: consume subscriber)
        result.created = created
        result.warnings = warnings
        result.merge = merge
        return result
    }

    /// `POST /v1/subscribers/{externalId}/merge`: the backend's merge, where refusals are errors
    /// (`MergeRefusal.error`), thrown after the route counted them.
    package static func merge(
        anonymousID: String, into externalID: String, caller: Caller, in ctx: any IdentityWriteContext,
        now: Timestamp
    ) throws -> OperationResult {
        let tenant = caller.tenant
        guard let existing = try ctx.subscriber(tenantID: tenant.id, alias: externalID) else {
            throw IdentityError.subscriberNotFound
        }
        let (subscriber, merge) = try Merger.merge(
            anonymousID: anonymousID, into: externalID, existing: existing, tenant: tenant, in: ctx, now: now)
        var result = OperationResult(subscriber: subscriber)
        result.merge = merge
        return result
    }

    // MARK: - Subscribers

    /// `PUT /v1/subscribers/{externalId}`: the backend's idempotent upsert.
    package static func upsert(
        externalID: String, email: String?, attributes: JSONObject?, subscribeEmail: Bool?,
        caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> OperationResult {
        let tenant = caller.tenant
        var created = false
        var subscriber: SubscriberRecord
        if let found = try ctx.subscriber(tenantID: tenant.id, alias: externalID) {
            subscriber = found
        } else {
            subscriber = try ctx.insertSubscriber(tenantID: tenant.id, id: externalID, anonymous: false, now: now)
            created = true
            try WebhookOutbox.subscriberCreated(subscriber, in: ctx, now: now)
        }
        let warnings = try applyProfile(
            to: &subscriber, email: email, attributes: attributes, subscribeEmail: subscribeEmail,
            source: caller.role == .backend ? .backend : .app, tenant: tenant, in: ctx, now: now)
        var result = OperationResult(subscriber: subscriber)
        result.created = created
        result.warnings = warnings
        return result
    }

    /// `PATCH /v1/subscribers/{id}/attributes` (API.md §7).
    package static func patchAttributes(
        id: SubscriberID, attributes: JSONObject, caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> OperationResult {
        guard var subscriber = try Access.resolve(id, caller: caller, in: ctx, now: now, create: true) else {
            throw IdentityError.subscriberNotFound
        }
        let warnings = try applyProfile(
            to: &subscriber, email: nil, attributes: attributes, subscribeEmail: nil,
            source: caller.role == .backend ? .backend : .app, tenant: caller.tenant, in: ctx, now: now)
        var result = OperationResult(subscriber: subscriber)
        result.warnings = warnings
        return result
    }

    /// `DELETE /v1/subscribers/{id}`: erases the person. Returns false when there was no one.
    package static func delete(
        id: SubscriberID, caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> Bool {
        guard let subscriber = try ctx.subscriber(tenantID: caller.tenant.id, alias: id.value) else { return false }
        if try ctx.webhookWanted(tenantID: caller.tenant.id, type: WebhookEventType.subscriberDeleted.rawValue) {
            let aliases = try ctx.aliases(key: subscriber.key, excluding: subscriber.id)
            try WebhookOutbox.record(
                .subscriberDeleted,
                ["subscriberId": .string(subscriber.id), "aliases": .array(aliases.map { .string($0) })],
                tenantID: caller.tenant.id, in: ctx, now: now)
        }
        try ctx.deleteSubscriber(key: subscriber.key)
        return true
    }

    // MARK: - Profile (email + attributes), shared by identify, upsert and attribute patches

    /// Merges email and attributes into the subscriber and saves it when anything changed.
    /// A call that changes nothing leaves `updatedAt` alone (API.md §7).
    static func applyProfile(
        to subscriber: inout SubscriberRecord, email: String?, attributes: JSONObject?, subscribeEmail: Bool?,
        source: AttributeMerge.Source, tenant: TenantRecord, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> [IdentityWarning] {
        let profile = try mergeProfile(
            into: &subscriber, email: email, attributes: attributes, subscribeEmail: subscribeEmail, source: source,
            tenant: tenant, in: ctx)
        if profile.changed {
            subscriber.updatedAt = now
            try ctx.updateSubscriber(subscriber)
        }
        return profile.warnings
    }

    /// `applyProfile` up to the subscriber's row: writes the attributes, changes the record, and
    /// says whether the row must be saved, which the caller does once with its own changes.
    static func mergeProfile(
        into subscriber: inout SubscriberRecord, email: String?, attributes: JSONObject?, subscribeEmail: Bool?,
        source: AttributeMerge.Source, tenant: TenantRecord, in ctx: any IdentityWriteContext
    ) throws -> (warnings: [IdentityWarning], changed: Bool) {
        var incoming = attributes ?? JSONObject()
        // The email is saved as the `email` attribute whichever way it came (API.md §6.4).
        var address = email
        if let email {
            incoming["email"] = .string(email)
        } else if let value = incoming["email"], !value.isNull {
            // The `email` attribute is the address: a number or object there is not one.
            guard let fromAttributes = value.stringValue else {
                throw IdentityError(code: .invalidEmail, message: "The 'email' attribute must be an email address.")
            }
            address = fromAttributes
        }
        if let address { try EmailRules.validate(address) }

        var changed = false
        var warnings: [IdentityWarning] = []
        if !incoming.isEmpty {
            let outcome = try AttributeMerge.merge(
                stored: try ctx.attributes(key: subscriber.key), incoming: incoming, source: source,
                settings: tenant.settings)
            warnings = outcome.warnings
            if !outcome.changes.isEmpty {
                try ctx.writeAttributes(key: subscriber.key, outcome.changes)
                changed = true
            }
            // The column mirrors the attribute, including a backend's `email: null`.
            if let change = outcome.changes.last(where: { $0.name == "email" }) {
                let newAddress = change.entry?.value.stringValue
                if subscriber.email != newAddress {
                    subscriber.email = newAddress
                    if newAddress == nil { subscriber.emailSubscribed = false }
                    changed = true
                }
            }
        }
        if subscriber.email != nil, tenant.settings.emailProviderConnected, address != nil || subscribeEmail != nil {
            let subscribed = subscribeEmail ?? true
            if subscriber.emailSubscribed != subscribed {
                subscriber.emailSubscribed = subscribed
                changed = true
            }
        }
        return (warnings, changed)
    }
}
