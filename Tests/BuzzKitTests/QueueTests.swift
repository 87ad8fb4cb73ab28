import Foundation
import XCTest

@testable import BuzzKit

final class QueueTests: XCTestCase {
    override func tearDown() {
        TemporaryFolders.shared.removeAll()
        super.tearDown()
    }

    func testOrderIsKeptAcrossRestartsAndIdentityGoesBeforeWhatFollowsIt() throws {
        let directory = temporaryStorage()
        let offline = FakeTransport()
        offline.fallback = .failure("offline")
        var anonymous = ""
        do {
            let client = try makeClient(directory, transport: offline)
            anonymous = client.anonymousId
            client.track("a1")
            client.track("a2")
            client.setPushToken("tok", permission: .authorized)
            client.identify("user_42", identityHash: "hash42")
            client.track("u1")
            client.setAttributes(["plan": "pro"])
            client.track("u2")
            XCTAssertEqual(drain(client).count, 1, "the head waits for its retry")
        }
        // Relaunch on the same storage: nothing lost. The identify that merges the anonymous id
        // goes first (the server links it), then everything in the order it was called.
        let first = FakeTransport()
        do {
            let client = try makeClient(directory, transport: first)
            XCTAssertEqual(client.deliverOnce(), .sent(count: 1))
        }
        XCTAssertEqual(first.requests.map(\.line), ["POST /v1/identify"])
        XCTAssertEqual(first.requests[0].json["anonymousId"] as? String, anonymous)
        XCTAssertEqual(first.requests[0].json["identityHash"] as? String, "hash42")
        // Relaunched again: the identify, acknowledged ahead of the rest, is not sent twice.
        let online = FakeTransport()
        let client = try makeClient(directory, transport: online)
        XCTAssertEqual(client.anonymousId, anonymous)
        XCTAssertEqual(client.externalId, "user_42")
        drain(client)
        let device = BuzzKitClient.pathComponent(client.deviceId)
        XCTAssertEqual(
            online.requests.map(\.line),
            [
                "POST /v1/events", "PUT /v1/subscribers/\(anonymous)/push-subscriptions/\(device)",
                "PUT /v1/subscribers/user_42/push-subscriptions/\(device)", "POST /v1/events",
                "PATCH /v1/subscribers/user_42/attributes", "POST /v1/events",
            ])
        let requests = online.requests
        XCTAssertEqual(requests[0].eventNames, ["a1", "a2"])
        XCTAssertEqual(requests[0].json["subscriberId"] as? String, anonymous, "stamped with the anonymous identity")
        XCTAssertEqual(
            requests[0].headers["BuzzKit-Identity-Hash"], "hash42",
            "linked, the anonymous id is the verified person's alias: calls through it carry the proof")
        XCTAssertEqual(requests[3].eventNames, ["u1"])
        XCTAssertEqual(requests[3].json["subscriberId"] as? String, "user_42")
        for request in requests { XCTAssertEqual(request.headers["BuzzKit-Identity-Hash"], "hash42") }
        XCTAssertTrue(client.isDrained)

        // Acknowledged work is not sent again after another relaunch.
        client.close()
        let again = FakeTransport()
        let relaunched = try makeClient(directory, transport: again)
        drain(relaunched)
        XCTAssertEqual(again.requests.count, 0)
    }

    func testBatchesHoldAtMost500EventsOfOneIdentityAndRetriesReuseTheKey() throws {
        let transport = FakeTransport()
        let clock = ManualWallClock()
        // Grouped durability: the test is about batching, not about 1,200 disk flushes.
        let client = try makeClient(temporaryStorage(), transport: transport, clock: clock) {
            $0.durability = .grouped(interval: 1)
        }
        for index in 0..<1200 { client.track("e\(index)") }
        transport.answer(status(503))
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 0.75))
        clock.advance(1)
        drain(client)
        let requests = transport.requests
        XCTAssertEqual(requests.map { $0.eventNames.count }, [500, 500, 500, 200])
        XCTAssertEqual(requests[0].headers["Idempotency-Key"], requests[1].headers["Idempotency-Key"])
        XCTAssertEqual(requests[0].body, requests[1].body, "a retry is the same request")
        XCTAssertNotEqual(requests[1].headers["Idempotency-Key"], requests[2].headers["Idempotency-Key"])
        let ids = requests[1...].flatMap {
            ($0.json["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        XCTAssertEqual(Set(ids).count, 1200, "every event has its own client id")
        XCTAssertEqual(requests[1...].flatMap(\.eventNames), (0..<1200).map { "e\($0)" })
    }

    func testABatchTooLargeForTheServerIsSplitNotDropped() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        for index in 0..<40 {
            client.track("big\(index)", properties: ["pad": .string(String(repeating: "x", count: 1000))])
        }
        transport.answer(status(413, errorCode: "payload_too_large"), status(413, errorCode: "payload_too_large"))
        drain(client)
        let sizes = transport.requests.map { $0.eventNames.count }
        XCTAssertEqual(sizes.prefix(3), [40, 20, 10])
        XCTAssertEqual(transport.requests.dropFirst(2).flatMap(\.eventNames), (0..<40).map { "big\($0)" })
        XCTAssertEqual(client.queueStatus.rejectedOperations, 0)
    }

    func testRefusedOperationsAreDroppedAndTheRestGoesOn() throws {
        let transport = FakeTransport()
        let client = try makeClient(temporaryStorage(), transport: transport)
        client.setAttributes(["a": 1])
        client.track("kept")
        transport.answer(status(400, errorCode: "invalid_attributes"))
        let steps = drain(client)
        XCTAssertEqual(steps, [.dropped(count: 1), .sent(count: 1), .idle])
        XCTAssertEqual(client.queueStatus.rejectedOperations, 1)
        XCTAssertEqual(transport.requests.last?.eventNames, ["kept"])
    }

    func testRetryAfterHoldsTheHeadEvenThroughFlush() async throws {
        let transport = FakeTransport()
        let clock = ManualWallClock()
        let client = try makeClient(temporaryStorage(), transport: transport, clock: clock)
        client.track("x")
        transport.answer(status(429, retryAfter: "120"))
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 120))
        _ = await client.flush(timeout: .milliseconds(1))
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 120), "no request before Retry-After")
        XCTAssertEqual(transport.requests.count, 1)
        clock.advance(120)
        XCTAssertEqual(client.deliverOnce(), .sent(count: 1))
    }

    func testBackoffIsCutShortByFlushButNotOtherwise() async throws {
        let transport = FakeTransport()
        let clock = ManualWallClock()
        let client = try makeClient(temporaryStorage(), transport: transport, clock: clock)
        client.track("x")
        transport.answer(.failure("offline"), .failure("offline"))
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 0.75))
        clock.advance(0.75)
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 1.5), "the second wait doubles")
        XCTAssertEqual(client.deliverOnce(), .waiting(until: clock.now() + 1.5))
        _ = await client.flush(timeout: .milliseconds(1))
        XCTAssertEqual(client.deliverOnce(), .sent(count: 1))
    }

    func testBoundedQueueDropsOldestEventsNeverIdentityAndRemembersItAfterRestart() throws {
        let directory = temporaryStorage()
        let offline = FakeTransport()
        offline.fallback = .failure("offline")
        do {
            let client = try makeClient(directory, transport: offline) { $0.maxQueuedEvents = 5 }
            for index in 0..<4 { client.track("old\(index)") }
            client.identify("user_7")
            for index in 0..<6 { client.track("new\(index)") }
            XCTAssertEqual(client.queueStatus.droppedEvents, 5)
            XCTAssertEqual(client.queueStatus.queuedEvents, 5)
        }
        let transport = FakeTransport()
        let client = try makeClient(directory, transport: transport) { $0.maxQueuedEvents = 5 }
        drain(client)
        XCTAssertEqual(transport.requests.map(\.line), ["POST /v1/identify", "POST /v1/events"])
        XCTAssertEqual(transport.requests[1].eventNames, ["new1", "new2", "new3", "new4", "new5"])
    }

    func testConcurrentCallersShareFlushesAndLoseNothing() throws {
        let directory = temporaryStorage()
        do {
            let client = try makeClient(directory, transport: FakeTransport())
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for index in 0..<40 { client.track("t\(thread)", properties: ["n": .int(index)]) }
            }
            XCTAssertEqual(client.queueStatus.queuedEvents, 320)
        }
        let transport = FakeTransport()
        let client = try makeClient(directory, transport: transport)
        drain(client)
        let events = transport.requests.flatMap { $0.json["events"] as? [[String: Any]] ?? [] }
        XCTAssertEqual(events.count, 320)
        for thread in 0..<8 {
            // Each caller's own events keep the order it made them in.
            let mine = events.filter { $0["name"] as? String == "t\(thread)" }
            XCTAssertEqual(mine.compactMap { ($0["properties"] as? [String: Any])?["n"] as? Int }, Array(0..<40))
        }
    }

    func testOneClientAtATimeOwnsAStorageFolder() throws {
        let directory = temporaryStorage()
        let first = try makeClient(directory, transport: FakeTransport())
        XCTAssertThrowsError(
            try makeClient(directory, transport: FakeTransport()), "a second owner would interleave appends")
        // The public initializer never fails: it falls back to a folder of its own.
        var configuration = Configuration()
        configuration.log = { _ in }
        let fallback = BuzzKitClient(
            clientKey: "bk_client_test", baseURL: URL(string: "http://127.0.0.1:9")!, storageDirectory: directory,
            configuration: configuration)
        XCTAssertNotEqual(fallback.storageDirectory, directory)
        TemporaryFolders.shared.add(fallback.storageDirectory)
        first.close()
        XCTAssertNoThrow(try makeClient(directory, transport: FakeTransport()), "free again once closed")
    }

    func testATornLastRecordIsCutOffAndTheRestSurvives() throws {
        let directory = temporaryStorage()
        do {
            let client = try makeClient(directory, transport: FakeTransport())
            client.track("one")
            client.track("two")
        }
        let log = directory.appendingPathComponent("queue.log")
        let handle = try FileHandle(forUpdating: log)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([40, 0, 0, 0, 1, 2, 3, 4, 4, 9]))  // a record cut short
        try handle.close()
        let transport = FakeTransport()
        let client = try makeClient(directory, transport: transport)
        client.track("three")
        drain(client)
        XCTAssertEqual(transport.requests.flatMap(\.eventNames), ["one", "two", "three"])
    }

    func testCompactionWithWorkLeftKeepsEveryQueuedEventAndItsBody() throws {
        let directory = temporaryStorage()
        let transport = FakeTransport()
        let log = directory.appendingPathComponent("queue.log").path
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? -1 }
        do {
            let client = try makeClient(directory, transport: transport) {
                $0.durability = .grouped(interval: 1)
                $0.maxQueuedEvents = 100_000
            }
            let pad = JSONValue.string(String(repeating: "p", count: 400))
            for index in 0..<24_000 { client.track("e\(index)", properties: ["pad": pad]) }
            let full = size()
            XCTAssertGreaterThan(full, 8 * 1024 * 1024)
            for _ in 0..<32 { XCTAssertEqual(client.deliverOnce(), .sent(count: 500)) }
            XCTAssertLessThan(size(), full / 2, "the acknowledged part was cut off")
        }
        let rest = FakeTransport()
        let client = try makeClient(directory, transport: rest)
        drain(client, limit: 1000)
        XCTAssertEqual(transport.requests.flatMap(\.eventNames), (0..<16_000).map { "e\($0)" })
        XCTAssertEqual(rest.requests.flatMap(\.eventNames), (16_000..<24_000).map { "e\($0)" })
        let pads = rest.requests.flatMap { $0.json["events"] as? [[String: Any]] ?? [] }.map {
            ($0["properties"] as? [String: Any])?["pad"] as? String
        }
        XCTAssertTrue(pads.allSatisfy { $0?.count == 400 }, "bodies survive the copy intact")
    }

    func testCompactionKeepsNumberingAndIdentity() throws {
        let directory = temporaryStorage()
        let transport = FakeTransport()
        var seen: Set<String> = []
        do {
            let client = try makeClient(directory, transport: transport) { $0.durability = .grouped(interval: 1) }
            client.identify("user_9", identityHash: "h9")
            for round in 0..<6 {
                for index in 0..<500 {
                    client.track("r\(round)e\(index)", properties: ["pad": .string(String(repeating: "x", count: 100))])
                }
                drain(client)
            }
        }
        let size =
            (try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("queue.log").path)[.size]
                as? Int) ?? -1
        XCTAssertLessThan(size, 256 * 1024, "the acknowledged log was compacted")
        for request in transport.requests {
            for event in request.json["events"] as? [[String: Any]] ?? [] { seen.insert(event["id"] as! String) }
        }
        let again = FakeTransport()
        let client = try makeClient(directory, transport: again)
        XCTAssertEqual(client.externalId, "user_9")
        client.track("after")
        drain(client)
        XCTAssertEqual(again.requests.count, 1)
        XCTAssertEqual(again.requests[0].headers["BuzzKit-Identity-Hash"], "h9")
        let id = (again.requests[0].json["events"] as? [[String: Any]])?.first?["id"] as? String ?? ""
        XCTAssertFalse(seen.contains(id), "an event id is never reused after compaction")
    }
}
