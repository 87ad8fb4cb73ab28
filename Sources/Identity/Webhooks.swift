import Crypto
import JSON
import Synchronization

// MARK: - Events

/// The event types of API.md §14, as they appear in `type` and in an endpoint's filter.
package enum WebhookEventType: String, CaseIterable, Sendable {
    case subscriberCreated = "subscriber.created"
    case subscriberMerged = "subscriber.merged"
    case subscriberVerified = "subscriber.verified"
    case subscriberDeleted = "subscriber.deleted"
    case pushSubscriptionMoved = "push_subscription.moved"
    case identitySecretRotated = "identity_secret.rotated"
    /// Sent by `POST /v1/webhooks/{id}/test` to that endpoint alone, whatever its filter.
    case test = "webhook.test"

    /// The types a filter may name (the test event is never filtered).
    package static let subscribable: [WebhookEventType] = allCases.filter { $0 != .test }
}

/// A webhook endpoint of a tenant. `events == nil` means every type, now and later.
package struct WebhookEndpointRecord: Sendable, Equatable {
    package var key: Int64
    package var id: String
    package var tenantID: String
    package var url: String
    package var events: [String]?
    package var description: String?
    /// `whsec_` + base64 of 32 random bytes; the worker signs with it.
    package var secret: String
    package var enabled: Bool
    package var createdAt: Timestamp

    package init(
        key: Int64 = 0, id: String, tenantID: String, url: String, events: [String]?, description: String?,
        secret: String, enabled: Bool = true, createdAt: Timestamp
    ) {
        self.key = key
        self.id = id
        self.tenantID = tenantID
        self.url = url
        self.events = events
        self.description = description
        self.secret = secret
        self.enabled = enabled
        self.createdAt = createdAt
    }
}

extension WebhookEndpointRecord {
    /// `events` as both stores keep it: `*`, or the types between commas (`,a,b,`), so that a
    /// search for `,type,` in SQL matches exactly one type.
    package var storedEvents: String {
        guard let events else { return "*" }
        return "," + events.joined(separator: ",") + ","
    }

    /// The types of a stored filter (``storedEvents``); nil for `*`, every type.
    package static func events(stored filter: String) -> [String]? {
        filter == "*" ? nil : filter.split(separator: ",").map(String.init)
    }
}

/// One delivery attempt as listed by `GET /v1/webhooks/{id}/deliveries`.
package struct WebhookDeliveryRecord: Sendable, Equatable {
    package var key: Int64
    package var eventID: String
    package var type: String
    package var attempt: Int
    /// `pending`, `succeeded` or `failed`.
    package var status: String
    package var responseStatus: Int?
    package var error: String?
    package var createdAt: Timestamp
    package var nextAttemptAt: Timestamp?

    package init(
        key: Int64, eventID: String, type: String, attempt: Int, status: String, responseStatus: Int?,
        error: String?, createdAt: Timestamp, nextAttemptAt: Timestamp?
    ) {
        self.key = key
        self.eventID = eventID
        self.type = type
        self.attempt = attempt
        self.status = status
        self.responseStatus = responseStatus
        self.error = error
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
    }
}

/// A pending attempt that is due, with what the worker needs to send it.
package struct DueWebhookDelivery: Sendable {
    package var key: Int64
    package var endpointKey: Int64
    package var url: String
    package var secret: String
    package var eventID: String
    package var body: String
    /// 1 for the first try.
    package var attempt: Int

    package init(
        key: Int64, endpointKey: Int64, url: String, secret: String, eventID: String, body: String, attempt: Int
    ) {
        self.key = key
        self.endpointKey = endpointKey
        self.url = url
        self.secret = secret
        self.eventID = eventID
        self.body = body
        self.attempt = attempt
    }
}

// MARK: - Storage seam

/// Webhook lookups; every endpoint lookup is scoped by tenant.
package protocol WebhookReadContext {
    /// The tenant's endpoints in creation order with `key > afterKey`.
    func webhookEndpoints(tenantID: String, afterKey: Int64, limit: Int) throws -> [WebhookEndpointRecord]
    func webhookEndpoint(tenantID: String, id: String) throws -> WebhookEndpointRecord?
    /// Attempts of one endpoint, newest first, with `key < beforeKey` when given.
    func webhookDeliveries(endpointKey: Int64, beforeKey: Int64?, limit: Int) throws -> [WebhookDeliveryRecord]
    /// Whether an enabled endpoint of the tenant wants `type`: one index probe, so a change in a
    /// tenant without webhooks costs nothing more.
    func webhookWanted(tenantID: String, type: String) throws -> Bool
    /// Pending attempts, due or not: the outbox backlog.
    func pendingWebhookDeliveryCount() throws -> Int
    /// Whether an attempt may be due at `now`: what the worker reads before it claims, so an idle
    /// server's polls write (and sync) nothing. True may still claim nothing (attempts leased, or of
    /// an endpoint disabled since); false means a claim would find nothing.
    func webhookDeliveryMayBeDue(now: Timestamp) throws -> Bool
    /// Whether a disabled endpoint has an attempt still pending: what the worker's upkeep reads
    /// before ``IdentityWriteContext/failPendingOfDisabledEndpoints()``, which most minutes
    /// has nothing to do.
    func disabledEndpointsHavePending() throws -> Bool
    /// Keys of the subscribers holding the device id or the token in this tenant.
    func pushSubscriptionHolders(tenantID: String, deviceID: String, token: String) throws -> [Int64]
}

/// Webhook changes, inside the write transaction of the change they belong to.
package protocol WebhookWriteContext: WebhookReadContext {
    /// Stores the endpoint; returns its key.
    func insertWebhookEndpoint(_ endpoint: WebhookEndpointRecord) throws -> Int64
    /// Deletes the endpoint and its delivery history.
    func deleteWebhookEndpoint(key: Int64) throws
    /// Turns the endpoint off and fails its pending attempts (a `410`).
    func disableWebhookEndpoint(key: Int64, now: Timestamp) throws
    /// Queues a first attempt of the event for `endpointKey`, or for every enabled endpoint of the
    /// tenant that wants `type` when nil, committed with the change it reports. Each carries the
    /// event's id, type, time (`now`) and `data` (compact JSON), from which
    /// ``WebhookOutbox/body(id:type:tenantID:createdAt:data:)`` renders the same body on every
    /// attempt (PostgreSQL: a row per attempt; SQLite: the group's events for an endpoint share a
    /// row until they are sent). Returns how many attempts were queued.
    func enqueueWebhookEvent(
        id: String, tenantID: String, type: String, data: String, now: Timestamp, endpointKey: Int64?
    ) throws -> Int
    /// Takes up to `limit` pending attempts due at `now` (oldest first, enabled endpoints only) and
    /// moves their due time to `leaseUntil`, so no other worker takes them while this one sends;
    /// if it dies meanwhile they come due again then. On PostgreSQL the selection is
    /// `FOR UPDATE SKIP LOCKED`, so servers sharing a database never claim the same attempt.
    func claimDueWebhookDeliveries(now: Timestamp, limit: Int, leaseUntil: Timestamp) throws
        -> [DueWebhookDelivery]
    /// Fails the attempts still pending for disabled endpoints; returns how many. Disabling fails
    /// them at once, but on PostgreSQL an event queued by a transaction that overlaps the disable
    /// can commit after it (the endpoint looked enabled to its insert), and would stay pending
    /// for ever: never sent, yet counted in the backlog. The worker sweeps them up now and then.
    func failPendingOfDisabledEndpoints() throws -> Int
    /// Records how a pending attempt went; a non-nil `retryAt` queues the next attempt.
    func completeWebhookDelivery(
        key: Int64, succeeded: Bool, responseStatus: Int?, error: String?, now: Timestamp, retryAt: Timestamp?
    ) throws
}

// MARK: - The outbox

/// Writes the events of API.md §14 into the outbox, in the transaction of the change itself.
package enum WebhookOutbox {
    /// Records `type` for the tenant if any enabled endpoint wants it; otherwise does nothing.
    /// `data` is built only then: most tenants have no endpoint, and the object a merge's event
    /// carried cost ~2k instructions of the writer thread per identify, built to be dropped.
    package static func record(
        _ type: WebhookEventType, _ data: @autoclosure () -> JSONObject, tenantID: String,
        in ctx: any IdentityWriteContext, now: Timestamp
    ) throws {
        guard try ctx.webhookWanted(tenantID: tenantID, type: type.rawValue) else { return }
        let id = newEventID(now: now)
        _ = try ctx.enqueueWebhookEvent(
            id: id, tenantID: tenantID, type: type.rawValue, data: JSONValue.object(data()).jsonString, now: now,
            endpointKey: nil)
    }

    /// `subscriber.created` for a row just inserted.
    package static func subscriberCreated(
        _ subscriber: SubscriberRecord, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws {
        try record(
            .subscriberCreated, ["subscriberId": .string(subscriber.id), "anonymous": .bool(subscriber.anonymous)],
            tenantID: subscriber.tenantID, in: ctx, now: now)
    }

    /// `push_subscription.moved` for each other subscriber the registration takes the device id or
    /// the token from; called before the registration is written, while the holders are visible.
    package static func pushMoves(
        _ registration: PushRegistration, to subscriber: SubscriberRecord, tenantID: String,
        in ctx: any IdentityWriteContext, now: Timestamp
    ) throws {
        guard try ctx.webhookWanted(tenantID: tenantID, type: WebhookEventType.pushSubscriptionMoved.rawValue)
        else { return }
        let holders = try ctx.pushSubscriptionHolders(
            tenantID: tenantID, deviceID: registration.deviceID, token: registration.token)
        for key in holders where key != subscriber.key {
            guard let from = try ctx.subscriber(key: key) else { continue }
            try record(
                .pushSubscriptionMoved,
                [
                    "deviceId": .string(registration.deviceID), "from": .string(from.id),
                    "to": .string(subscriber.id),
                ], tenantID: tenantID, in: ctx, now: now)
        }
    }

    /// Queues a `webhook.test` event for this endpoint alone. Returns the event id.
    package static func sendTest(
        to endpoint: WebhookEndpointRecord, in ctx: any IdentityWriteContext, now: Timestamp
    ) throws -> String {
        let id = newEventID(now: now)
        _ = try ctx.enqueueWebhookEvent(
            id: id, tenantID: endpoint.tenantID, type: WebhookEventType.test.rawValue,
            data: JSONValue.object(["webhookId": .string(endpoint.id)]).jsonString, now: now,
            endpointKey: endpoint.key)
        return id
    }

    /// `evt_` and 24 base62 characters: the creation millisecond in 8 (so ids sort by time, and
    /// the outbox's id indexes grow at their right edge instead of splitting a random page per
    /// event), then 16 random ones (about 95 bits): unique without coordination. The random
    /// characters come from CSPRNG bytes fetched a few hundred at a time (``idRandomness``): one
    /// `RAND_bytes` call per id cost as much as the rest of the id and its JSON together.
    package static func newEventID(now: Timestamp) -> String {
        var id: [UInt8] = []
        id.reserveCapacity(28)
        id.append(contentsOf: "evt_".utf8)
        appendSortableMillis(now.millis, to: &id)
        idRandomness.append(16, to: &id)
        return String(decoding: id, as: UTF8.self)
    }

    /// The random characters of event ids, drawn by the writer (and the test endpoint's caller).
    static let idRandomness = BufferedRandomToken()

    /// Appends `millis` in 8 base62 digits, most significant first; the digits' ASCII order is
    /// their value order, so the strings sort as the numbers do (until the year 8888).
    static func appendSortableMillis(_ millis: Int64, to output: inout [UInt8]) {
        var value = UInt64(max(0, millis))
        let start = output.count
        output.append(contentsOf: repeatElement(SecureRandom.base62[0], count: 8))
        for index in stride(from: start + 7, through: start, by: -1) {
            output[index] = SecureRandom.base62[Int(value % 62)]
            value /= 62
        }
    }

    /// The body an outbox row sends: the one it was rendered with before migration 0004 when it
    /// kept one (`kept`), else ``body(id:type:tenantID:createdAt:data:)`` of its columns.
    package static func body(
        kept: String?, id: String, type: String, tenantID: String, createdAt: Timestamp, data: String?
    ) throws -> String {
        if let kept { return kept }
        guard let data else { throw WebhookOutboxError.rowWithoutData(eventID: id) }
        return body(id: id, type: type, tenantID: tenantID, createdAt: createdAt, data: data)
    }

    /// The POSTed body `{id, type, tenantId, createdAt, data}`, rendered at send time from what the
    /// outbox row keeps: a function of its arguments alone, so every attempt sends the same bytes.
    /// `data` is spliced in as stored (compact JSON written by ``record(_:_:tenantID:in:now:)``).
    package static func body(id: String, type: String, tenantID: String, createdAt: Timestamp, data: String)
        -> String
    {
        var out = "{\"id\":"
        out += JSONValue.string(id).jsonString
        out += ",\"type\":"
        out += JSONValue.string(type).jsonString
        out += ",\"tenantId\":"
        out += JSONValue.string(tenantID).jsonString
        out += ",\"createdAt\":"
        out += JSONValue.string(createdAt.rfc3339).jsonString
        out += ",\"data\":"
        out += data
        out += "}"
        return out
    }
}

/// An outbox row that cannot be sent as stored.
package enum WebhookOutboxError: Error, CustomStringConvertible {
    /// Neither a kept body nor the data to render one (the schema's CHECK forbids it).
    case rowWithoutData(eventID: String)

    package var description: String {
        switch self {
        case .rowWithoutData(let eventID): "outbox row of \(eventID) has neither a body nor data"
        }
    }
}

/// Uniform base62 characters from ``SecureRandom/bytes(_:)`` fetched `batch` bytes at a time.
/// Which bytes the next token gets is as unpredictable as the CSPRNG's output; only the number of
/// calls into libcrypto drops.
package final class BufferedRandomToken: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var next = 0
    }
    private let state = Mutex(State())
    private let batch: Int

    package init(batch: Int = 512) { self.batch = batch }

    /// `length` characters of ``SecureRandom/base62``, each uniform.
    package func token(length: Int) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(length)
        append(length, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `count` characters of ``SecureRandom/base62``, each uniform: ``SecureRandom``'s own
    /// sampling, served from the buffer (no allocation unless it refills).
    package func append(_ count: Int, to output: inout [UInt8]) {
        state.withLock { state in
            SecureRandom.appendSymbols(count, of: SecureRandom.base62, to: &output) {
                if state.next == state.bytes.count {
                    state.bytes = SecureRandom.bytes(batch)
                    state.next = 0
                }
                state.next += 1
                return state.bytes[state.next - 1]
            }
        }
    }
}
