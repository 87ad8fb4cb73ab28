import Identity
import Testing

/// Webhook event ids (`webhook-id`): unique, and ordered by time so the outbox's id indexes
/// take each new event at their right edge.
struct WebhookEventIDTests {
    @Test func idsHaveTheDocumentedShape() {
        let id = WebhookOutbox.newEventID(now: Timestamp(millis: 1_800_000_000_000))
        #expect(id.hasPrefix("evt_"))
        #expect(id.utf8.count == 4 + 24)
        #expect(id.dropFirst(4).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }, "base62")
    }

    @Test func laterIdsSortAfterEarlierOnes() {
        // Across digit boundaries too: 61 → 62 ms rolls the last time digit over.
        let times: [Int64] = [0, 1, 61, 62, 3843, 3844, 1_700_000_000_000, 1_800_000_000_000, 1_800_000_000_001]
        let ids = times.map { WebhookOutbox.newEventID(now: Timestamp(millis: $0)) }
        #expect(ids == ids.sorted())
    }

    @Test func idsMadeInTheSameMillisecondDiffer() {
        let now = Timestamp(millis: 1_800_000_000_000)
        let ids = (0..<1000).map { _ in WebhookOutbox.newEventID(now: now) }
        #expect(Set(ids).count == 1000)
        // The time part is shared; what follows is random.
        #expect(Set(ids.map { $0.prefix(12) }).count == 1)
    }
}
