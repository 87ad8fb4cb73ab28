import Crypto
import HTTP1
import Identity
import JSON

/// Subscribers from the backend's side, and attribute patches from either side (API.md §5, §7).
struct SubscriberController {
    /// Most subscribers or events one page may hold.
    static let maxPageSize = 1000
    static let defaultPageSize = 100

    var routes: [Route] {
        [
            Route(
                method: .GET, path: "/v1/subscribers", access: .backend, operationID: "listSubscribers", handler: list),
            Route(
                method: .PUT, path: "/v1/subscribers/:id", access: .backend, operationID: "upsertSubscriber",
                handler: upsert),
            Route(
                method: .GET, path: "/v1/subscribers/:id", access: .backend, operationID: "getSubscriber", handler: get,
                handlerWaits: false),
            Route(
                method: .DELETE, path: "/v1/subscribers/:id", access: .backend, operationID: "deleteSubscriber",
                handler: delete),
            Route(
                method: .GET, path: "/v1/subscribers/:id/events", access: .backend, operationID: "listSubscriberEvents",
                handler: timeline),
            Route(
                method: .POST, path: "/v1/subscribers/:id/merge", access: .backend, operationID: "mergeSubscriber",
                handler: merge),
            Route(
                method: .PATCH, path: "/v1/subscribers/:id/attributes", access: .app, operationID: "updateAttributes",
                handler: patchAttributes),
        ]
    }

    func upsert(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let externalID = try context.parameter("id")
        try IDRules.validateExternalID(externalID, blocked: caller.tenant.settings.blockedExternalIds)
        let body = try context.jsonBody()
        try body.allowOnly(["email", "attributes", "subscribe"])
        let email = try body.string("email")
        if let email { try EmailRules.validate(email) }
        let attributes = try body.object("attributes")
        if let attributes { try AttributeMerge.validate(attributes, limits: caller.tenant.settings.attributeLimits) }
        let subscribeEmail = try Self.subscribeEmail(body)
        let now = context.now
        return .write { ctx in
            let result = try Operations.upsert(
                externalID: externalID, email: email, attributes: attributes, subscribeEmail: subscribeEmail,
                caller: caller, in: ctx, now: now)
            return try Self.reply(result, status: result.created ? .created : .ok, in: ctx)
        }
    }

    /// Asks for the snapshot without waiting (`Outcome.snapshot`): a PostgreSQL store answers
    /// the GETs of many requests in one statement.
    func get(_ context: RequestContext) throws -> Outcome {
        guard let tenant = context.caller?.tenant else { throw APIError.unauthorized }
        let id = try context.subscriberIDParameter()
        return .snapshot(tenantID: tenant.id, id: id.value, then: Self.answerGet)
    }

    /// A GET's answer from the snapshot its id reached, made from the request's context: the
    /// caller and the id (checked by `get`) are read again there, not captured.
    private static func answerGet(_ found: SnapshotFound, _ context: RequestContext) throws -> Reply {
        switch found {
        case .rendering(let rendering):
            // The common answer (a backend's, by the subscriber's own id) returned as it is made:
            // through the shared tail below it was copied and destroyed once more (callgrind).
            guard rendering.reachedByAlias else { return Reply(serializedData: rendering.bytes) }
            return resolved(rendering.bytes, asked: try context.parameter("id"))
        case .snapshot(let snapshot?):
            // Only an app's read has anything to check: the caller is copied out of the context
            // for that alone (a copy is its tenant, proof and callback retained and released).
            if case .app? = context.caller?.role {
                guard try Access.checkedForRead(snapshot, caller: context.requireCaller(), now: context.now) != nil
                else { throw IdentityError.subscriberNotFound }
            }
            let data = Rendering.subscriberData(snapshot)
            let asked = try context.parameter("id")
            guard snapshot.record.id != asked else { return Reply(serializedData: data) }
            return resolved(data, asked: asked)
        case .snapshot(nil):
            throw IdentityError.subscriberNotFound
        }
    }

    /// The answer of a GET whose id is an alias: `resolvedFrom` names the id asked.
    private static func resolved(_ data: [UInt8], asked: String) -> Reply {
        var reply = Reply(serializedData: data)
        reply.metadata["resolvedFrom"] = .string(asked)
        return reply
    }

    func list(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let query = context.query
        let limit = try Self.limit(query)
        let newestFirst: Bool
        switch query["order"] {
        case nil, "", "oldest": newestFirst = false
        case "newest": newestFirst = true
        default: throw APIError.invalidRequest("'order' must be oldest or newest.")
        }
        var fromKey: Int64 = newestFirst ? .max : 0
        if let cursor = query["cursor"], !cursor.isEmpty {
            guard let key = Self.decodeCursor(cursor, newestFirst: newestFirst) else {
                throw APIError.invalidRequest("'cursor' is not a cursor this server gave for this order.")
            }
            fromKey = key
        }
        let anonymous = try Self.boolParameter(query, "anonymous")
        let verified = try Self.boolParameter(query, "verified")
        return try context.store.read { ctx in
            let page =
                newestFirst
                ? try ctx.listSubscribers(
                    tenantID: caller.tenant.id, beforeKey: fromKey, limit: limit + 1, anonymous: anonymous,
                    verified: verified)
                : try ctx.listSubscribers(
                    tenantID: caller.tenant.id, afterKey: fromKey, limit: limit + 1, anonymous: anonymous,
                    verified: verified)
            let shown = Array(page.prefix(limit))
            let next = page.count > limit ? Self.encodeCursor(shown.last!.key, newestFirst: newestFirst) : nil
            // Every item is the whole subscriber of API.md §4, read a page at a time.
            return .reply(
                Reply(serializedData: Rendering.subscriberPage(try ctx.snapshots(of: shown), nextCursor: next)))
        }
    }

    func delete(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        let now = context.now
        return .write { ctx in
            guard try Operations.delete(id: id, caller: caller, in: ctx, now: now) else {
                throw IdentityError.subscriberNotFound
            }
            return Reply(["deleted": true])
        }
    }

    func timeline(_ context: RequestContext) throws -> Outcome {
        let query = context.query
        let limit = try Self.limit(query)
        var after: Int64 = 0
        if let raw = query["after"], !raw.isEmpty {
            guard let seq = Int64(raw), seq >= 0 else {
                throw APIError.invalidRequest("'after' must be a seq (0 or more).")
            }
            after = seq
        }
        return try Self.readExisting(context) { record, ctx in
            let page = try ctx.events(key: record.key, afterSeq: after, limit: limit + 1)
            let shown = page.prefix(limit)
            let next: JSONValue = page.count > limit ? Rendering.integer(shown.last!.seq) : .null
            return Reply(["events": .array(try shown.map(Rendering.event)), "nextCursor": next])
        }
    }

    /// A backend read of the subscriber the `id` parameter reaches through any alias (404 when
    /// none), answered with `metadata.resolvedFrom` when the id was not the current one.
    static func readExisting(
        _ context: RequestContext, _ body: (SubscriberRecord, any IdentityReadContext) throws -> Reply
    ) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        return try context.store.read { ctx in
            guard let record = try Access.resolveForRead(id, caller: caller, in: ctx, now: context.now) else {
                throw IdentityError.subscriberNotFound
            }
            var reply = try body(record, ctx)
            noteResolved(&reply, currentID: record.id, asked: id)
            return .reply(reply)
        }
    }

    /// `metadata.resolvedFrom` when the id asked for was not the subscriber's current one.
    /// In place: taking and returning the reply copied it twice, and the record once (~800
    /// instructions of retains and releases a GET, callgrind).
    private static func noteResolved(_ reply: inout Reply, currentID: String, asked id: SubscriberID) {
        if currentID != id.value { reply.metadata["resolvedFrom"] = .string(id.value) }
    }

    func merge(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let externalID = try context.parameter("id")
        try IDRules.validateExternalID(externalID, blocked: caller.tenant.settings.blockedExternalIds)
        let body = try context.jsonBody()
        try body.allowOnly(["anonymousId"])
        let anonymousID = try body.requireString("anonymousId")
        try IDRules.validateAnonymousID(anonymousID)
        let now = context.now
        let metrics = context.metrics
        return .write { ctx in
            let result = try Operations.merge(
                anonymousID: anonymousID, into: externalID, caller: caller, in: ctx, now: now)
            if let refusal = result.merge?.refusal {
                metrics.recordMergeRefusal(refusal)
                throw refusal.error
            }
            if let shape = result.merge?.shape { metrics.recordMerge(shape: shape.rawValue) }
            return try Self.reply(result, in: ctx)
        }
    }

    func patchAttributes(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let id = try context.subscriberIDParameter()
        let body = try context.jsonBody()
        try body.allowOnly(["attributes"])
        guard let attributes = try body.object("attributes") else {
            throw APIError.invalidRequest("'attributes' is required.")
        }
        try AttributeMerge.validate(attributes, limits: caller.tenant.settings.attributeLimits)
        let now = context.now
        return .write { ctx in
            try Self.reply(
                try Operations.patchAttributes(id: id, attributes: attributes, caller: caller, in: ctx, now: now),
                in: ctx)
        }
    }

    // MARK: - Shared pieces

    /// `{subscriber, merge?}` with the operation's warnings. The subscriber is read here, inside
    /// the job, when the store can do that for little (`snapshotIfCheap`: SQLite, a small
    /// person); otherwise once the write is durable, by a reader (`ShownSubscriber`).
    static func reply(_ result: OperationResult, status: HTTPStatus = .ok, in ctx: any IdentityWriteContext) throws
        -> Reply
    {
        var data: JSONObject = [:]
        if let merge = result.merge { data["merge"] = Rendering.merge(merge) }
        var reply = Reply(status: status, .object(data), warnings: result.warnings)
        reply.subscriberToShow =
            try ctx.snapshotIfCheap(of: result.subscriber).map { .snapshot($0) }
            ?? .afterCommit(result.subscriber)
        return reply
    }

    /// `subscribe: {"email": false}` → false.
    static func subscribeEmail(_ body: JSONObject) throws(APIError) -> Bool? {
        guard let subscribe = try body.object("subscribe") else { return nil }
        try subscribe.allowOnly(["email"], path: "subscribe.")
        return try subscribe.bool("email", path: "subscribe.")
    }

    static func limit(_ query: [String: String]) throws(APIError) -> Int {
        guard let raw = query["limit"], !raw.isEmpty else { return defaultPageSize }
        guard let limit = Int(raw), limit >= 1, limit <= maxPageSize else {
            throw .invalidRequest("'limit' must be from 1 to \(maxPageSize).")
        }
        return limit
    }

    static func boolParameter(_ query: [String: String], _ name: String) throws(APIError) -> Bool? {
        switch query[name] {
        case nil, "": nil
        case "true": true
        case "false": false
        default: throw .invalidRequest("'\(name)' must be true or false.")
        }
    }

    /// Cursors are opaque to clients: base64url of `s:<key>` (oldest first) or `n:<key>` (newest
    /// first), so the format can change and a cursor of one order is refused by the other.
    static func encodeCursor(_ key: Int64, newestFirst: Bool = false) -> String {
        Base64URL.encode(Array("\(newestFirst ? "n" : "s"):\(key)".utf8))
    }

    static func decodeCursor(_ cursor: String, newestFirst: Bool = false) -> Int64? {
        let prefix = newestFirst ? "n:" : "s:"
        guard let bytes = Base64URL.decode(cursor), let text = String(validating: bytes, as: UTF8.self),
            text.hasPrefix(prefix), let key = Int64(text.dropFirst(2)), key >= 0
        else { return nil }
        return key
    }
}
