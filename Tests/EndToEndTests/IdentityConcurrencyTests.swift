import Foundation
import Synchronization
import TestSupport
import Testing

/// API.md §6 "merge it once, never twice, and never into two people", under real concurrency:
/// many threads, each with its own connection, against one server. And an absorb of 10,000 events.
@Suite struct IdentityConcurrencyTests {
    /// What one racing identify answered.
    struct Answer: Sendable {
        var externalID: String
        var status: Int
        var shape: String?
        var warnings: [String]
    }

    /// Checks a timeline: seqs 1...n without gaps, each client id once. Returns the ids.
    private func checkTimeline(_ s: IdentitySession, _ id: String) throws -> [String] {
        let timeline = try s.timeline(id, limit: 1000)
        #expect(timeline.map { $0.int("seq")! } == Array(0..<timeline.count).map { $0 + 1 }, "seqs of \(id)")
        let ids = timeline.map { $0.string("id")! }
        #expect(Set(ids).count == ids.count, "no client id twice on \(id)")
        #expect(try s.subscriber(id)?.int("eventCount") == timeline.count)
        return ids
    }

    private func race(_ s: IdentitySession, anon: String, into externalIDs: [String], alongside sends: Int) -> (
        [Answer], [String]
    ) {
        let answers = Mutex<[Answer]>([])
        let port = s.server.port
        let appHeaders = s.tenant.app
        let errors = runConcurrently(externalIDs.count + sends) { i in
            let client = try HTTPClient(port: port)
            if i < externalIDs.count {
                let r = try client.send(
                    "POST", "/v1/identify", json: ["externalId": externalIDs[i], "anonymousId": anon],
                    headers: appHeaders)
                let answer = Answer(
                    externalID: externalIDs[i], status: r.status, shape: r.mergeShape, warnings: r.warnings)
                answers.withLock { $0.append(answer) }
            } else {
                let j = i - externalIDs.count
                let events = (0..<5).map { makeEvent("during-\(j)-\($0)") }
                let r = try client.send(
                    "POST", "/v1/events", json: ["subscriberId": anon, "events": events], headers: appHeaders)
                guard r.status == 200, r.data?.int("accepted") == 5 else {
                    throw TestFailure("send \(j): \(r.status) \(r.text)")
                }
            }
        }
        return (answers.withLock { $0 }, errors)
    }

    @Test(arguments: StoreKind.available) func oneAnonymousIDIdentifiedAsManyPeopleAtOnceMergesOnce(_ store: StoreKind)
        throws
    {
        let s = try IdentitySession(IdentityServers.heavy(store))
        let anon = newAnonymousID()
        let before = (0..<20).map { makeEvent("pre-\($0)") }
        try s.sendEvents(anon, before)
        let people = (0..<12).map { "racer_\($0)" }
        let (answers, errors) = race(s, anon: anon, into: people, alongside: 4)
        #expect(errors.isEmpty, "\(errors)")
        #expect(answers.count == people.count)
        #expect(answers.allSatisfy { $0.status == 200 })
        let winners = answers.filter { $0.shape == "rename" }
        try #require(winners.count == 1, "\(answers.map { $0.shape ?? "-" })")
        let winner = winners[0].externalID
        for loser in answers where loser.externalID != winner {
            #expect(loser.shape == "none")
            #expect(loser.warnings == ["merge_source_identified"])
        }
        // The anonymous id belongs to exactly one person, who has every event exactly once.
        #expect(try s.subscriber(anon)?.string("id") == winner)
        let all = try s.listAll()
        #expect(all.count == people.count)
        #expect(all.allSatisfy { $0.bool("anonymous") == false })
        let owners = all.filter { ($0.int("eventCount") ?? 0) > 0 }.map { $0.string("id")! }
        #expect(owners == [winner])
        let ids = try checkTimeline(s, winner)
        let expected = Set(
            before.map { $0.string("id")! } + (0..<4).flatMap { j in (0..<5).map { "during-\(j)-\($0)" } })
        #expect(Set(ids.filter { !$0.hasPrefix("$") }) == expected)
        #expect(ids.count == expected.count + 1, "one merge marker")
        #expect(try s.subscriber(winner)?.strings("aliases") == [anon])
    }

    @Test(arguments: StoreKind.available) func oneAnonymousIDRacingIntoExistingPeopleIsAbsorbedOnce(_ store: StoreKind)
        throws
    {
        let s = try IdentitySession(IdentityServers.heavy(store))
        let people = (0..<10).map { "existing_\($0)" }
        for person in people { try s.backend("PUT", "/v1/subscribers/\(person)", ["attributes": [:]]) }
        let anon = newAnonymousID()
        try s.sendEvents(anon, (0..<20).map { makeEvent("pre-\($0)") })
        let (answers, errors) = race(s, anon: anon, into: people, alongside: 0)
        #expect(errors.isEmpty, "\(errors)")
        let winners = answers.filter { $0.shape == "absorb" }
        try #require(winners.count == 1, "\(answers.map { $0.shape ?? "-" })")
        #expect(
            answers.filter { $0.shape == "none" && $0.warnings == ["merge_source_identified"] }.count == people.count
                - 1)
        let winner = winners[0].externalID
        #expect(try s.subscriber(anon)?.string("id") == winner)
        #expect(try s.listAll("anonymous=true").isEmpty)
        #expect(try checkTimeline(s, winner).count == 21)
        for person in people where person != winner { #expect(try s.timeline(person).isEmpty) }
    }

    @Test(arguments: StoreKind.available) func manyDevicesOfOnePersonIdentifyAtOnce(_ store: StoreKind) throws {
        let s = try IdentitySession(IdentityServers.heavy(store))
        let devices = (0..<10).map { _ in newAnonymousID() }
        let shapes = Mutex<[String]>([])
        let duplicates = Mutex<Int>(0)
        let port = s.server.port
        let headers = s.tenant.app
        let errors = runConcurrently(devices.count) { d in
            let client = try HTTPClient(port: port)
            let anon = devices[d]
            func send(_ events: [JSONDict]) throws -> (Int, Int) {
                let r = try client.send(
                    "POST", "/v1/events", json: ["subscriberId": anon, "events": events], headers: headers)
                guard r.status == 200, let data = r.data else { throw TestFailure("events: \(r.status) \(r.text)") }
                return (data.int("accepted")!, data.int("duplicates")!)
            }
            let before = (0..<30).map { makeEvent("dev\(d)-pre-\($0)") }
            for chunk in stride(from: 0, to: 30, by: 10) { _ = try send(Array(before[chunk..<chunk + 10])) }
            let r = try client.send(
                "POST", "/v1/identify", json: ["externalId": "pat", "anonymousId": anon], headers: headers)
            guard r.status == 200, let shape = r.mergeShape else {
                throw TestFailure("identify: \(r.status) \(r.text)")
            }
            shapes.withLock { $0.append(shape) }
            // After the merge the device keeps using its anonymous id: new events, and a retry of old ones.
            let (accepted, _) = try send((0..<10).map { makeEvent("dev\(d)-post-\($0)") })
            guard accepted == 10 else { throw TestFailure("post events accepted \(accepted)") }
            let (again, dup) = try send(before)
            guard again == 0 else { throw TestFailure("retried events stored again: \(again)") }
            duplicates.withLock { $0 += dup }
        }
        #expect(errors.isEmpty, "\(errors)")
        #expect(shapes.withLock { $0.sorted() } == ["absorb"] + Array(repeating: "absorb", count: 8) + ["rename"])
        #expect(duplicates.withLock { $0 } == 300)

        #expect(try s.listAll().map { $0.string("id") } == ["pat"])
        let pat = try #require(try s.subscriber("pat"))
        #expect(Set(pat.strings("aliases")) == Set(devices))
        for anon in devices { #expect(try s.subscriber(anon)?.string("id") == "pat") }
        let ids = try checkTimeline(s, "pat")
        let expected = Set(
            (0..<10).flatMap { d in (0..<30).map { "dev\(d)-pre-\($0)" } + (0..<10).map { "dev\(d)-post-\($0)" } })
        #expect(Set(ids.filter { !$0.hasPrefix("$") }) == expected, "no event lost")
        #expect(ids.count == expected.count + devices.count, "one marker per device")
        let markers = try s.timeline("pat").filter { $0.string("name") == "$subscriber.merged" }
        #expect(Set(markers.compactMap { $0.object("properties")?.string("from") }) == Set(devices))
    }

    @Test(arguments: StoreKind.available) func absorbingTenThousandEventsKeepsOrderTimestampsAndIds(_ store: StoreKind)
        throws
    {
        let s = try IdentitySession(IdentityServers.heavy(store))
        try s.backend("PUT", "/v1/subscribers/whale", ["attributes": ["plan": "pro"]])
        try s.sendEvents("whale", (0..<5).map { makeEvent("own-\($0)", timestamp: isoStamp($0, base: "2024-06-01")) })
        let anon = newAnonymousID()
        let total = 10_000
        // Timestamps deliberately out of order within each batch: the timeline keeps send order.
        func stampOf(_ i: Int) -> String { isoStamp((i % 2 == 0 ? i : i + 7) * 8, base: "2023-02-03") }
        for start in stride(from: 0, to: total, by: 500) {
            let batch = (start..<start + 500).map { i in
                makeEvent(
                    "bulk-\(i)", i % 100 == 0 ? "$session.start" : "tap", timestamp: stampOf(i), properties: ["i": i])
            }
            let client = try HTTPClient(port: s.server.port)
            let r = try client.send(
                "POST", "/v1/events", json: ["subscriberId": anon, "events": batch], headers: s.tenant.backend)
            try #require(r.status == 200, "\(r.text)")
            try #require(r.data?.int("accepted") == 500)
        }
        #expect(try s.subscriber(anon)?.int("eventCount") == total)

        let r = try s.identify(["externalId": "whale", "anonymousId": anon])
        #expect(r.status == 200)
        #expect(r.mergeShape == "absorb")
        #expect(r.subscriber?.int("eventCount") == total + 6)
        // Sent again right away (on SQLite the absorbed events are likely still moving, the last
        // one among the last to go): the absorbed id is a duplicate, the new one comes after the
        // merge's marker.
        let client = try HTTPClient(port: s.server.port)
        let retry = try client.send(
            "POST", "/v1/events",
            json: ["subscriberId": "whale", "events": [makeEvent("bulk-\(total - 1)"), makeEvent("after")]],
            headers: s.tenant.backend)
        #expect(retry.data?.int("accepted") == 1 && retry.data?.int("duplicates") == 1, "\(retry.text)")

        var timeline = try s.timeline("whale", limit: 1000)
        #expect(timeline.count == total + 7)
        #expect(timeline.map { $0.int("seq")! } == Array(1...(total + 7)))
        #expect(timeline.removeLast().string("id") == "after")
        #expect(timeline.prefix(5).map { $0.string("id")! } == (0..<5).map { "own-\($0)" })
        var mismatches = 0
        for i in 0..<total {
            let e = timeline[5 + i]
            if e.string("id") != "bulk-\(i)" || e.string("timestamp") != stampOf(i)
                || e.object("properties")?.int("i") != i
                || e.string("name") != (i % 100 == 0 ? "$session.start" : "tap")
            {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        let marker = try #require(timeline.last)
        #expect(marker.string("name") == "$subscriber.merged")
        #expect(marker.object("properties")?.int("eventsMoved") == total)
        #expect(marker.object("properties")?.string("shape") == "absorb")
        #expect(try s.listAll().map { $0.string("id") } == ["whale"])
    }
}
