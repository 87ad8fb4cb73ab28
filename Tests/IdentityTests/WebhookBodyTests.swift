import Identity
import JSON
import Testing

/// The body the worker renders at send time from an outbox row (id, type, tenant, time, data).
struct WebhookBodyTests {
    static let data: JSONObject = [
        "subscriberId": "u_1", "from": "anon \"quoted\" \u{e9}", "shape": "link", "eventsMoved": 3,
    ]

    /// Byte for byte what rendering the whole envelope as one JSON object gives (the body before
    /// the outbox kept only `data`), so receivers see no change.
    @Test func isTheEnvelopeAsOneJSONObject() {
        let createdAt = Timestamp(millis: 1_800_000_000_123)
        let body = WebhookOutbox.body(
            id: "evt_1", type: "subscriber.merged", tenantID: "ten_\\x", createdAt: createdAt,
            data: JSONValue.object(Self.data).jsonString)
        let whole = JSONValue.object([
            "id": "evt_1", "type": "subscriber.merged", "tenantId": "ten_\\x", "createdAt": .string(createdAt.rfc3339),
            "data": .object(Self.data),
        ]).jsonString
        #expect(body == whole)
        #expect(body.hasPrefix(#"{"id":"evt_1","type":"subscriber.merged","tenantId":"ten_\\x","createdAt":"#))
    }

    @Test func theSameRowRendersTheSameBytes() {
        let render = {
            WebhookOutbox.body(
                id: "evt_2", type: "webhook.test", tenantID: "ten_a", createdAt: Timestamp(millis: 5),
                data: #"{"webhookId":"whk_1"}"#)
        }
        #expect(render() == render())
        #expect(render().hasSuffix(#","data":{"webhookId":"whk_1"}}"#))
    }
}
