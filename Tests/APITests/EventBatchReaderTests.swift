import Identity
import JSON
import TestSupport
import Testing

@testable import API

/// `EventBatchReader` reads `POST /v1/events` bodies without a JSON tree and leaves anything
/// else to the general path (parse, check, validate). Whatever it accepts must be read exactly
/// as the general path reads it, and every body the general path accepts it must accept too
/// (or the fast path would quietly stop being taken). Random bodies, valid and not, both ways.
struct EventBatchReaderTests {
    private let receivedAt = Timestamp(millis: 1_764_000_000_000)

    /// The controller's general path, without the HTTP around it.
    private func general(_ body: [UInt8]) -> (subscriberID: String, events: [NewEvent])? {
        guard let value = try? JSONParser.parse(body, maxDepth: JSONLimits.maxDepth),
            let object = value.objectValue,
            object.keys.allSatisfy({ $0 == "subscriberId" || $0 == "events" }),
            let subscriberID = object["subscriberId"]?.stringValue,
            let list = object["events"]?.arrayValue,
            let events = try? EventRules.validate(list, receivedAt: receivedAt)
        else { return nil }
        return (subscriberID, events)
    }

    @Test func readsEveryBatchTheGeneralPathReadsAndNothingElse() {
        var random = SplitMix64(state: 0xE7E4_75)
        var accepted = 0
        var refused = 0
        for round in 0..<6000 {
            var generator = BodyGenerator(random: random)
            var text = generator.body()
            random = SplitMix64(state: random.next())
            // Some bodies cut short or with a byte changed: syntax errors must fall through too.
            if round % 7 == 0, text.count > 2 {
                text = Array(text.prefix(Int(random.next() % UInt64(text.count))))
            } else if round % 11 == 0, !text.isEmpty {
                let replacements = Array("{}[],:\"\\ x1".utf8)
                text[Int(random.next() % UInt64(text.count))] =
                    replacements[Int(random.next() % UInt64(replacements.count))]
            }
            let fast = EventBatchReader.read(text, receivedAt: receivedAt)
            let slow = general(text)
            let shown = String(decoding: text, as: UTF8.self)
            #expect(fast?.subscriberID == slow?.subscriberID, "\(shown)")
            #expect(fast?.events == slow?.events, "\(shown)")
            if slow == nil { refused += 1 } else { accepted += 1 }
        }
        // Both kinds were generated, or the comparison above proved little.
        #expect(accepted > 500)
        #expect(refused > 500)
    }

    @Test func propertiesAreStoredAsTheGeneralPathWritesThem() throws {
        let body = Array(
            #"""
            { "events" : [ { "properties" : { "b" : [ 1 , -2.5e3 , true , null , { } , [ ] ] ,
              "a\u00e9" : "x\"y\\z\n\u0001" , "😀" : "\ud83d\ude00" } , "name" : "n" , "id" : "i" } ] ,
              "subscriberId" : "user\u002d1" }
            """#.utf8)
        let fast = try #require(EventBatchReader.read(body, receivedAt: receivedAt))
        #expect(fast.subscriberID == "user-1")
        #expect(
            fast.events.first?.propertiesJSON
                == #"{"b":[1,-2.5e3,true,null,{},[]],"aé":"x\"y\\z\n\u0001","😀":"😀"}"#)
        #expect(fast.events == general(body)?.events)
    }

    /// The body, the batch, the event and its properties are four levels; the limit is 32.
    @Test(arguments: [28, 29]) func nestsAsDeepAsTheGeneralPathAndNoDeeper(arrays: Int) {
        let body = Array(
            (#"{"subscriberId":"u","events":[{"id":"a","name":"n","properties":{"a":"#
                + String(repeating: "[", count: arrays) + String(repeating: "]", count: arrays) + "}}]}").utf8)
        let fast = EventBatchReader.read(body, receivedAt: receivedAt)
        #expect((fast != nil) == (4 + arrays <= JSONLimits.maxDepth))
        #expect(fast?.events == general(body)?.events)
        #expect((general(body) != nil) == (4 + arrays <= JSONLimits.maxDepth))
    }

    @Test func leavesEveryRefusalToTheGeneralPath() {
        let refused = [
            #"{"subscriberId":"u","events":[]}"#,  // empty batch
            #"{"subscriberId":"u","events":[{"id":"a","name":"n"}],"x":1}"#,  // unknown field
            #"{"subscriberId":"u","subscriberId":"v","events":[{"id":"a","name":"n"}]}"#,  // repeated
            #"{"subscriberId":"u","events":[{"id":"a","name":"n","properties":{"k":1,"k":2}}]}"#,
            #"{"subscriberId":"u","events":[{"id":"$a","name":"n"}]}"#,  // the server's id space
            #"{"subscriberId":"u","events":[{"id":"a","name":"$n"}]}"#,
            #"{"subscriberId":"u","events":[{"id":"a","name":"n","timestamp":"yesterday"}]}"#,
            #"{"subscriberId":"u","events":[{"id":"a","name":"n","properties":[1]}]}"#,
            #"{"subscriberId":null,"events":[{"id":"a","name":"n"}]}"#,
            #"{"subscriberId":"u","events":[{"id":"a","name":"n"}]} x"#,  // trailing bytes
            "\u{FEFF}" + #"{"subscriberId":"u","events":[{"id":"a","name":"n"}]}"#,  // byte order mark
            // Nested deeper than the limit:
            #"{"subscriberId":"u","events":[{"id":"a","name":"n","properties":{"a":"#
                + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}}]}",
        ]
        for body in refused {
            #expect(EventBatchReader.read(Array(body.utf8), receivedAt: receivedAt) == nil, "\(body)")
        }
        let batch = (0...EventRules.maxBatch).map { #"{"id":"e\#($0)","name":"n"}"# }.joined(separator: ",")
        let tooMany = Array(#"{"subscriberId":"u","events":["#.utf8) + Array(batch.utf8) + Array("]}".utf8)
        #expect(EventBatchReader.read(tooMany, receivedAt: receivedAt) == nil)
    }
}

/// Random `POST /v1/events` bodies: mostly well formed, with every kind of member, value and
/// spacing the general path accepts, and now and then one it refuses.
private struct BodyGenerator {
    var random: SplitMix64

    private mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
    private mutating func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }

    private mutating func space() -> String { chance(20) ? pick([" ", "\n", "\t ", "\r\n  "]) : "" }

    private mutating func string() -> String {
        let pieces = [
            "a", "screen_view", "user-1", "é", "日本", "😀", #"\""#, #"\\"#, #"\n"#, #"\u00e9"#,
            #"\ud83d\ude00"#, "$", "/", #"\/"#, " ", "0",
        ]
        var text = ""
        for _ in 0..<Int(random.next() % 5) { text += pick(pieces) }
        return "\"" + text + "\""
    }

    private mutating func scalar() -> String {
        pick(["0", "-1", "3.25", "1e9", "-0.5E-3", "true", "false", "null"])
    }

    private mutating func value(depth: Int) -> String {
        switch random.next() % 4 {
        case 0 where depth < 3: return object(depth: depth + 1)
        case 1 where depth < 3:
            let elements = (0..<Int(random.next() % 3)).map { _ in value(depth: depth + 1) }
            return "[" + space() + elements.joined(separator: space() + "," + space()) + space() + "]"
        case 2: return string()
        default: return scalar()
        }
    }

    private mutating func object(depth: Int) -> String {
        var members: [String] = []
        for _ in 0..<Int(random.next() % 4) {
            // Now and then a name twice: the parser refuses the document.
            let name = chance(3) ? "\"k\"" : string()
            members.append(name + space() + ":" + space() + value(depth: depth))
        }
        return "{" + space() + members.joined(separator: space() + "," + space()) + space() + "}"
    }

    private mutating func event() -> String {
        var members: [String] = []
        if !chance(3) { members.append(#""id":"# + (chance(3) ? scalar() : string())) }
        if !chance(3) { members.append(#""name":"# + (chance(3) ? scalar() : string())) }
        if chance(40) {
            members.append(
                #""timestamp":"#
                    + pick([#""2026-12-02T10:00:00Z""#, #""2026-12-02T10:00:00.123+02:00""#, "null", #""soon""#]))
        }
        if chance(70) { members.append(#""properties":"# + (chance(5) ? scalar() : object(depth: 3))) }
        if chance(2) { members.append(#""extra":1"#) }
        members.shuffle(using: &random)
        return "{" + space() + members.joined(separator: space() + "," + space()) + space() + "}"
    }

    mutating func body() -> [UInt8] {
        var members: [String] = []
        if !chance(2) { members.append(#""subscriberId":"# + (chance(2) ? "null" : string())) }
        if !chance(2) {
            let events = (0..<Int(random.next() % 4) + (chance(2) ? 0 : 1)).map { _ in event() }
            members.append(
                #""events":"# + space() + "[" + space() + events.joined(separator: space() + "," + space()) + "]")
        }
        if chance(2) { members.append(#""other":true"#) }
        members.shuffle(using: &random)
        return Array((space() + "{" + members.joined(separator: ",") + "}" + space()).utf8)
    }
}
