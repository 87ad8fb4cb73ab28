import Testing

@testable import Storage

/// The text of an outbox row: what goes in comes back, and what a line cannot hold is refused
/// when the event is queued.
@Suite struct OutboxRowTextTests {
    let events = [
        OutboxEvent(
            id: "evt_1", type: "subscriber.merged", createdAt: 1_764_662_400_123,
            data: #"{"subscriberId":"ada","from":"anon_x","note":"a\ttab, a\nnewline, ünïcødé"}"#),
        OutboxEvent(id: "evt_2", type: "subscriber.created", createdAt: 0, data: "{}"),
    ]

    @Test func eventsComeBackAsTheyWent() throws {
        // The escapes above are JSON's own (backslash, t), not raw control characters.
        for event in events { try OutboxRowText.check(event) }
        #expect(try OutboxRowText.decode(OutboxRowText.encode(events)) == events)
        #expect(try OutboxRowText.decode(OutboxRowText.encode([events[1]])) == [events[1]])
    }

    @Test func aRawTabOrNewlineIsRefused() {
        for data in ["{\"a\":\"\t\"}", "{\"a\":1}\n"] {
            #expect(throws: OutboxRowText.Malformed.self) {
                try OutboxRowText.check(OutboxEvent(id: "evt_3", type: "webhook.test", createdAt: 1, data: data))
            }
        }
    }

    @Test func aDamagedRowDoesNotDecode() {
        for text in ["evt_1\tsubscriber.created\t12\n", "evt_1\tsubscriber.created\tsoon\t{}\n"] {
            #expect(throws: OutboxRowText.Malformed.self) { try OutboxRowText.decode(text) }
        }
    }
}
