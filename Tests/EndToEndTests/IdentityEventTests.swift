import Foundation
import TestSupport
import Testing

/// API.md §8: event batches, idempotency, gzip, names, the timeline.
@Suite struct IdentityEventTests {
    private func batch(_ prefix: String, _ count: Int) -> [JSONDict] {
        (0..<count).map { makeEvent("\(prefix)-\($0)", timestamp: isoStamp($0)) }
    }

    @Test(arguments: StoreKind.available) func fiveHundredIsTheMostACallCarries(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        #expect(try s.sendEvents(anon, batch("ok", 500)) == (500, 0))
        let tooMany = try s.app("POST", "/v1/events", ["subscriberId": anon, "events": batch("big", 501)])
        #expect(tooMany.status == 400)
        #expect(tooMany.errorCode == "batch_too_large")
        #expect(try s.subscriber(anon)?.int("eventCount") == 500)
        let empty = try s.app("POST", "/v1/events", ["subscriberId": anon, "events": []])
        #expect(empty.status == 400)
        #expect(empty.errorCode == "invalid_request")
    }

    @Test(arguments: StoreKind.available) func aBatchIsAllOrNothing(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let fresh = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("first")])
        let before = try #require(try s.subscriber(anon))
        let badEvents: [JSONDict] = [
            makeEvent("x", "$custom"),
            makeEvent("x", "$subscriber.merged"),
            makeEvent("x", String(repeating: "n", count: 129)),
            makeEvent("x", ""),
            ["name": "no id"],
            ["id": "", "name": "empty id"],
            ["id": 7, "name": "numeric id"],
            makeEvent("x", timestamp: "yesterday"),
            makeEvent("x", timestamp: "1969-12-31T23:59:59Z"),
            ["id": "x", "name": "n", "properties": [1, 2]],
            ["id": "x", "name": "n", "extra": true],
            ["id": "$subscriber.merged:\(newAnonymousID())", "name": "n"],
        ]
        for bad in badEvents {
            var events = batch("good", 10)
            events.insert(bad, at: 7)
            for id in [anon, fresh] {
                let r = try s.app("POST", "/v1/events", ["subscriberId": id, "events": events])
                #expect(r.status == 400, "\(bad)")
                #expect(r.errorCode == "invalid_event", "\(bad)")
                #expect(r.errorDetails?.int("index") == 7, "\(bad)")
            }
        }
        let after = try #require(try s.subscriber(anon))
        #expect(after.int("eventCount") == 1)
        #expect(after.string("updatedAt") == before.string("updatedAt"))
        #expect(try s.timeline(anon).map { $0.string("id") } == ["first"])
        #expect(try s.subscriber(fresh) == nil, "a refused batch does not even create the subscriber")
    }

    @Test(arguments: StoreKind.available) func namesOfTheServerAreRefusedExceptSessions(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let longest = String(repeating: "n", count: 128)
        #expect(
            try s.sendEvents(
                anon,
                [
                    makeEvent("s1", "$session.start"), makeEvent("s2", "$session.end"), makeEvent("s3", longest),
                    makeEvent("s4", "purchase $ completed"), makeEvent("s5", "注文完了"),
                ]
            ).accepted == 5)
        #expect(
            try s.timeline(anon).map { $0.string("name")! } == [
                "$session.start", "$session.end", longest, "purchase $ completed", "注文完了",
            ])
        for name in ["$session.middle", "$Session.start", "$notificationPermission", "$"] {
            #expect(
                try s.app("POST", "/v1/events", ["subscriberId": anon, "events": [makeEvent("z", name)]]).errorCode
                    == "invalid_event")
        }
    }

    @Test(arguments: StoreKind.available) func clientIDsAreIdempotencyKeys(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        #expect(try s.sendEvents(anon, [makeEvent("e1"), makeEvent("e2")]) == (2, 0))
        #expect(try s.sendEvents(anon, [makeEvent("e1"), makeEvent("e2"), makeEvent("e3")]) == (1, 2))
        #expect(try s.sendEvents(anon, [makeEvent("e4"), makeEvent("e4", "other name")]) == (1, 1))
        let timeline = try s.timeline(anon)
        #expect(timeline.map { $0.string("id")! } == ["e1", "e2", "e3", "e4"])
        #expect(timeline.map { $0.int("seq")! } == [1, 2, 3, 4])
        #expect(timeline.last?.string("name") == "screen.viewed", "the first one stored stays")
        // The same client id on another person is another event.
        #expect(try s.sendEvents(newAnonymousID(), [makeEvent("e1")]) == (1, 0))
    }

    @Test(arguments: StoreKind.available) func retriesThroughAnAliasAfterAMergeAreDuplicates(_ store: StoreKind) throws
    {
        let s = try IdentitySession(store)
        let renamed = newAnonymousID()
        let absorbed = newAnonymousID()
        try s.backend("PUT", "/v1/subscribers/pia", ["attributes": [:]])
        #expect(try s.sendEvents(renamed, [makeEvent("r1"), makeEvent("r2")]).accepted == 2)
        #expect(try s.sendEvents(absorbed, [makeEvent("a1")]).accepted == 1)
        #expect(try s.identify(["externalId": "quinn", "anonymousId": renamed]).mergeShape == "rename")
        #expect(try s.identify(["externalId": "pia", "anonymousId": absorbed]).mergeShape == "absorb")
        // The device did not see the answers and sends again, still under the anonymous id.
        #expect(try s.sendEvents(renamed, [makeEvent("r1"), makeEvent("r2"), makeEvent("r3")]) == (1, 2))
        #expect(try s.sendEvents(absorbed, [makeEvent("a1"), makeEvent("a2")]) == (1, 1))
        #expect(try s.sendEvents("pia", [makeEvent("a1"), makeEvent("a2")]) == (0, 2))
        #expect(
            try s.timeline("quinn").filter { $0.string("name") != "$subscriber.merged" }.map { $0.string("id")! } == [
                "r1", "r2", "r3",
            ])
        #expect(
            try s.timeline("pia").filter { $0.string("name") != "$subscriber.merged" }.map { $0.string("id")! } == [
                "a1", "a2",
            ])
        #expect(try s.subscriber("pia")?.int("eventCount") == 3)
    }

    @Test(arguments: StoreKind.available) func gzipBodiesAndTheOneMebibyteLimit(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let body: JSONDict = ["subscriberId": anon, "events": batch("gz", 300)]
        let compressed = try gzip(Array(try JSONSerialization.data(withJSONObject: body)))
        let ok = try s.client.send(
            "POST", "/v1/events", body: compressed,
            headers: s.tenant.app.merging(["Content-Type": "application/json", "Content-Encoding": "gzip"]) { $1 })
        #expect(ok.status == 200, "\(ok.text)")
        #expect(ok.data?.int("accepted") == 300)

        // Small on the wire, over 1 MiB once decoded.
        let padding = String(repeating: "p", count: 2_200)
        let huge: JSONDict = [
            "subscriberId": anon,
            "events": (0..<500).map { makeEvent("huge-\($0)", properties: ["padding": padding]) },
        ]
        let raw = try JSONSerialization.data(withJSONObject: huge)
        #expect(raw.count > 1 << 20)
        let small = try gzip(Array(raw))
        #expect(small.count < 64 * 1024)
        let client = try HTTPClient(port: s.server.port)
        let tooLarge = try client.send(
            "POST", "/v1/events", body: small,
            headers: s.tenant.app.merging(["Content-Type": "application/json", "Content-Encoding": "gzip"]) { $1 })
        #expect(tooLarge.status == 413)
        #expect(tooLarge.errorCode == "payload_too_large")
        #expect(try s.subscriber(anon)?.int("eventCount") == 300)
        // Just under the limit once decoded is fine.
        let fits: JSONDict = [
            "subscriberId": anon, "events": (0..<400).map { makeEvent("fits-\($0)", properties: ["padding": padding]) },
        ]
        let fitsBody = try JSONSerialization.data(withJSONObject: fits)
        #expect(fitsBody.count < 1 << 20)
        let accepted = try HTTPClient(port: s.server.port).send(
            "POST", "/v1/events", body: try gzip(Array(fitsBody)),
            headers: s.tenant.app.merging(["Content-Type": "application/json", "Content-Encoding": "gzip"]) { $1 })
        #expect(accepted.status == 200)
        #expect(try s.subscriber(anon)?.int("eventCount") == 700)
    }

    @Test(arguments: StoreKind.available) func timelinePagesInSequenceOrder(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.sendEvents(anon, batch("t", 12))
        try s.sendEvents(anon, (12..<25).map { makeEvent("t-\($0)") })
        var seqs: [Int] = []
        var ids: [String] = []
        var after = 0
        var pages = 0
        while pages < 10 {
            let r = try s.backend("GET", "/v1/subscribers/\(anon)/events?after=\(after)&limit=10")
            #expect(r.status == 200)
            let events = r.data?.objects("events") ?? []
            seqs += events.map { $0.int("seq")! }
            ids += events.map { $0.string("id")! }
            pages += 1
            guard let next = r.data?["nextCursor"] as? Int else {
                #expect(r.data?["nextCursor"] is NSNull)
                break
            }
            #expect(next == events.last?.int("seq"))
            after = next
        }
        #expect(pages == 3)
        #expect(seqs == Array(1...25))
        #expect(ids == (0..<25).map { "t-\($0)" })
        #expect(try s.backend("GET", "/v1/subscribers/\(anon)/events?after=25").data?.objects("events").isEmpty == true)
        #expect(try s.backend("GET", "/v1/subscribers/\(anon)/events?after=20").data?.objects("events").count == 5)
        for bad in ["after=-1", "after=x", "limit=0", "limit=1001"] {
            #expect(
                try s.backend("GET", "/v1/subscribers/\(anon)/events?\(bad)").errorCode == "invalid_request", "\(bad)")
        }
        #expect(try s.backend("GET", "/v1/subscribers/\(newAnonymousID())/events").status == 404)
    }

    @Test(arguments: StoreKind.available) func timestampsAreKept(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let before = Date()
        try s.sendEvents(
            anon,
            [
                makeEvent("utc", timestamp: "2021-03-04T05:06:07.089Z"),
                makeEvent("offset", timestamp: "2021-03-04T07:06:07.089+02:00"),
                makeEvent("seconds", timestamp: "2021-03-04T05:06:07Z"),
                makeEvent("micros", timestamp: "2021-03-04T05:06:07.123456Z"),
                makeEvent("none"),
                makeEvent("props", properties: ["price": 9.99, "items": ["a", "b"], "meta": ["ok": true]]),
            ])
        let timeline = try s.timeline(anon)
        let byID = Dictionary(uniqueKeysWithValues: timeline.map { ($0.string("id")!, $0) })
        #expect(byID["utc"]?.string("timestamp") == "2021-03-04T05:06:07.089Z")
        #expect(byID["offset"]?.string("timestamp") == "2021-03-04T05:06:07.089Z")
        #expect(byID["seconds"]?.string("timestamp") == "2021-03-04T05:06:07.000Z")
        #expect(byID["micros"]?.string("timestamp") == "2021-03-04T05:06:07.123Z")
        let received = try #require(byID["none"]?.string("receivedAt"))
        #expect(byID["none"]?.string("timestamp") == received, "no timestamp: the time received")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let receivedDate = try #require(formatter.date(from: received))
        #expect(abs(receivedDate.timeIntervalSince(before)) < 60)
        let props = try #require(byID["props"]?.object("properties"))
        #expect(props["price"] as? Double == 9.99)
        #expect(props["items"] as? [String] == ["a", "b"])
        #expect(props.object("meta")?.bool("ok") == true)
    }
}
