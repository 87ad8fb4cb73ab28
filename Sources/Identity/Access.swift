/// Who may act on which subscriber (API.md §5 and §9), decided inside the write or read
/// that uses the answer, so a check and its effect see the same state.
package enum Access {
    /// Checks a proof for `externalID`; a wrong proof is always refused.
    /// - Returns: true when a valid proof was given.
    package static func verifyProof(
        _ proof: IdentityProof?, externalID: String, tenant: TenantRecord, now: Timestamp
    ) throws(IdentityError) -> Bool {
        guard let proof else { return false }
        do {
            try IdentityVerifier.verify(
                proof, externalId: externalID, secrets: tenant.secrets.secrets(atMillis: now.millis),
                nowMillis: now.millis)
            return true
        } catch {
            throw IdentityError(code: error.code, message: error.message)
        }
    }

    /// May this caller act on the identified subscriber `externalID`, which was ever verified or not?
    /// Backend keys need no proof; the app needs one when the tenant requires it or once the
    /// subscriber was verified ("once verified, always verified").
    /// - Returns: true when a valid proof was given.
    @discardableResult
    package static func authorize(
        _ caller: Caller, externalID: String, everVerified: Bool, now: Timestamp
    ) throws(IdentityError) -> Bool {
        let proven = try verifyProof(caller.proof, externalID: externalID, tenant: caller.tenant, now: now)
        if caller.role == .app && !proven { caller.onUnproven?() }
        if caller.role == .app && !proven
            && (caller.tenant.settings.requireVerification || everVerified)
        {
            throw .verificationRequired
        }
        return proven
    }

    /// Resolves the subscriber an app or backend call names by `id` (any alias), checking the
    /// caller may act on it. An unknown id is created when `create` is true, so everything works
    /// before anyone logs in.
    package static func resolve(
        _ id: SubscriberID, caller: Caller, in ctx: any IdentityWriteContext, now: Timestamp, create: Bool
    ) throws -> SubscriberRecord? {
        let tenant = caller.tenant
        if let found = try ctx.subscriber(tenantID: tenant.id, alias: id.value) {
            try check(found, caller: caller, now: now)
            return found
        }
        // An unknown id is checked like a new one even when nothing is created (logout), so
        // the answer never tells an unproven app whether the id exists.
        let fresh = SubscriberRecord(
            key: 0, tenantID: tenant.id, id: id.value, anonymous: id.isAnonymous, createdAt: now, updatedAt: now)
        try check(fresh, caller: caller, now: now)
        guard create else { return nil }
        let created = try ctx.insertSubscriber(tenantID: tenant.id, id: id.value, anonymous: id.isAnonymous, now: now)
        try WebhookOutbox.subscriberCreated(created, in: ctx, now: now)
        return created
    }

    /// The read-only twin of `resolve`, for lookups that never create.
    package static func resolveForRead(
        _ id: SubscriberID, caller: Caller, in ctx: any IdentityReadContext, now: Timestamp
    ) throws -> SubscriberRecord? {
        guard let found = try ctx.subscriber(tenantID: caller.tenant.id, alias: id.value) else { return nil }
        try check(found, caller: caller, now: now)
        return found
    }

    /// `resolveForRead`'s check on a whole snapshot, which the store may have answered from its
    /// cache (`IdentityStore.snapshot`).
    package static func checkedForRead(
        _ found: SubscriberSnapshot?, caller: Caller, now: Timestamp
    ) throws -> SubscriberSnapshot? {
        guard let found else { return nil }
        // Only an app's reads have anything to check; a backend's do not copy the record out.
        if caller.role == .app { try check(found.record, caller: caller, now: now) }
        return found
    }

    private static func check(_ subscriber: SubscriberRecord, caller: Caller, now: Timestamp) throws(IdentityError) {
        guard caller.role == .app else { return }
        if subscriber.anonymous {
            if !caller.tenant.settings.allowAnonymous { throw .verificationRequired }
        } else {
            try authorize(caller, externalID: subscriber.id, everVerified: subscriber.verified, now: now)
        }
    }
}

extension ProofFailure {
    /// Moved into the domain's error type for the API's one error path.
    package var identityError: IdentityError { IdentityError(code: code, message: message) }
}
