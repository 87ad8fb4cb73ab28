import Crypto
import HTTP1
import Identity
import JSON
import WebhookDelivery
import WebhookSigning

/// Webhook endpoints and their deliveries, from the backend (API.md §14).
struct WebhookController {
    /// Where endpoints may point (the SSRF rule).
    let destinations: DestinationPolicy
    /// Longest URL and description accepted.
    static let maxURLLength = 2048
    static let maxDescriptionLength = 1024

    var routes: [Route] {
        [
            Route(method: .POST, path: "/v1/webhooks", access: .backend, operationID: "createWebhook", handler: create),
            Route(method: .GET, path: "/v1/webhooks", access: .backend, operationID: "listWebhooks", handler: list),
            Route(method: .GET, path: "/v1/webhooks/:id", access: .backend, operationID: "getWebhook", handler: get),
            Route(
                method: .DELETE, path: "/v1/webhooks/:id", access: .backend, operationID: "deleteWebhook",
                handler: delete),
            Route(
                method: .GET, path: "/v1/webhooks/:id/deliveries", access: .backend,
                operationID: "listWebhookDeliveries", handler: deliveries),
            Route(
                method: .POST, path: "/v1/webhooks/:id/test", access: .backend, operationID: "testWebhook",
                handler: test),
        ]
    }

    func create(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let body = try context.jsonBody()
        try body.allowOnly(["url", "events", "description"])
        let url = try body.requireString("url")
        guard url.utf8.count <= Self.maxURLLength else {
            throw APIError.invalidRequest("'url' is longer than \(Self.maxURLLength) bytes.")
        }
        do {
            try destinations.check(url)
        } catch {
            throw APIError.invalidRequest("'url' is refused: \(error.description)")
        }
        let events = try Self.events(body["events"])
        let description = try body.string("description")
        if let description, description.utf8.count > Self.maxDescriptionLength {
            throw APIError.invalidRequest("'description' is longer than \(Self.maxDescriptionLength) bytes.")
        }
        let secret = WebhookSignature.generateSecret()
        let endpoint = WebhookEndpointRecord(
            id: "whk_" + SecureRandom.token(length: 24), tenantID: tenantID, url: url, events: events,
            description: description, secret: secret, createdAt: context.now)
        return .write { ctx in
            var stored = endpoint
            stored.key = try ctx.insertWebhookEndpoint(endpoint)
            return Reply(status: .created, ["webhook": Self.render(stored), "secret": .string(secret)])
        }
    }

    func list(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let query = context.query
        let limit = try SubscriberController.limit(query)
        let after = try Self.cursor(query) ?? 0
        let page = try context.store.read { ctx in
            try ctx.webhookEndpoints(tenantID: tenantID, afterKey: after, limit: limit + 1)
        }
        let shown = page.prefix(limit)
        let next: JSONValue = page.count > limit ? .string(Self.encodeCursor(shown.last!.key)) : .null
        return .reply(Reply(["webhooks": .array(shown.map(Self.render)), "nextCursor": next]))
    }

    func get(_ context: RequestContext) throws -> Outcome {
        .reply(Reply(["webhook": Self.render(try endpoint(context))]))
    }

    func delete(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let id = try context.parameter("id")
        return .write { ctx in
            guard let endpoint = try ctx.webhookEndpoint(tenantID: tenantID, id: id) else { throw Self.notFound }
            try ctx.deleteWebhookEndpoint(key: endpoint.key)
            return Reply(["deleted": true])
        }
    }

    func deliveries(_ context: RequestContext) throws -> Outcome {
        let endpoint = try endpoint(context)
        let query = context.query
        let limit = try SubscriberController.limit(query)
        let before = try Self.cursor(query)
        let page = try context.store.read { ctx in
            try ctx.webhookDeliveries(endpointKey: endpoint.key, beforeKey: before, limit: limit + 1)
        }
        let shown = page.prefix(limit)
        let next: JSONValue = page.count > limit ? .string(Self.encodeCursor(shown.last!.key)) : .null
        return .reply(Reply(["deliveries": .array(shown.map(Self.render)), "nextCursor": next]))
    }

    func test(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let id = try context.parameter("id")
        let now = context.now
        return .write { ctx in
            guard let endpoint = try ctx.webhookEndpoint(tenantID: tenantID, id: id) else { throw Self.notFound }
            let eventID = try WebhookOutbox.sendTest(to: endpoint, in: ctx, now: now)
            return Reply(["eventId": .string(eventID)])
        }
    }

    // MARK: - Helpers

    static let notFound = APIError(APIError.Code.notFound, message: "No such webhook.")

    private func endpoint(_ context: RequestContext) throws -> WebhookEndpointRecord {
        let tenantID = try context.requireCaller().tenant.id
        let id = try context.parameter("id")
        guard let endpoint = try context.store.read({ try $0.webhookEndpoint(tenantID: tenantID, id: id) }) else {
            throw Self.notFound
        }
        return endpoint
    }

    /// `events`: absent, null or `["*"]` for every type; else a non-empty list of known types.
    static func events(_ value: JSONValue?) throws(APIError) -> [String]? {
        guard let value, !value.isNull else { return nil }
        guard let items = value.arrayValue, !items.isEmpty else {
            throw .invalidRequest("'events' must be a non-empty array of event types.")
        }
        var types: [String] = []
        for item in items {
            guard let type = item.stringValue else { throw .invalidRequest("'events' must hold strings.") }
            if type == "*" { return nil }
            guard WebhookEventType.subscribable.contains(where: { $0.rawValue == type }) else {
                throw .invalidRequest(
                    "'\(type)' is not an event type; use \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", ")) or *."
                )
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    static func render(_ e: WebhookEndpointRecord) -> JSONValue {
        [
            "id": .string(e.id), "url": .string(e.url),
            "events": .array((e.events ?? ["*"]).map { .string($0) }),
            "description": e.description.map { .string($0) } ?? .null, "enabled": .bool(e.enabled),
            "createdAt": Rendering.time(e.createdAt),
        ]
    }

    static func render(_ d: WebhookDeliveryRecord) -> JSONValue {
        [
            "id": .string("dlv_\(d.key)"), "eventId": .string(d.eventID), "type": .string(d.type),
            "attempt": Rendering.integer(d.attempt), "status": .string(d.status),
            "responseStatus": d.responseStatus.map { Rendering.integer($0) } ?? .null,
            "error": d.error.map { .string($0) } ?? .null, "createdAt": Rendering.time(d.createdAt),
            "nextAttemptAt": d.nextAttemptAt.map { Rendering.time($0) } ?? .null,
        ]
    }

    static func encodeCursor(_ key: Int64) -> String { Base64URL.encode(Array("w:\(key)".utf8)) }

    static func cursor(_ query: [String: String]) throws(APIError) -> Int64? {
        guard let cursor = query["cursor"], !cursor.isEmpty else { return nil }
        guard let bytes = Base64URL.decode(cursor), let text = String(validating: bytes, as: UTF8.self),
            text.hasPrefix("w:"), let key = Int64(text.dropFirst(2)), key >= 0
        else { throw .invalidRequest("'cursor' is not a cursor this server gave.") }
        return key
    }
}
