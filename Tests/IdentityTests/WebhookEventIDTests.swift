import Crypto
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

    /// The buffered source hands out uniform base62 characters across refills: a batch of 7
    /// bytes refills several times per token.
    @Test func bufferedRandomCharactersSpanTheAlphabetAcrossRefills() {
        let source = BufferedRandomToken(batch: 7)
        let tokens = (0..<2000).map { _ in source.token(length: 16) }
        #expect(tokens.allSatisfy { $0.utf8.count == 16 })
        #expect(Set(tokens).count == tokens.count)
        var counts = [UInt8: Int]()
        for token in tokens { for byte in token.utf8 { counts[byte, default: 0] += 1 } }
        #expect(Set(counts.keys) == Set(SecureRandom.base62))
        // 32,000 draws over 62 symbols: ~516 each (sd ~23); a buffer handed out twice or a symbol
        // mapped twice would put some far outside this band.
        #expect(counts.values.allSatisfy { (380...660).contains($0) }, "\(counts.values.sorted())")
    }
}
