import Identity
import JSON
import Testing

@Suite struct AttributeMergeTests {
    let settings = TenantSettings()

    func stored(_ pairs: [(String, JSONValue, Bool)]) -> [(name: String, entry: AttributeEntry)] {
        pairs.map { ($0.0, AttributeEntry(value: $0.1, setByBackend: $0.2)) }
    }

    func changes(_ outcome: AttributeMerge.Outcome) -> [String: JSONValue?] {
        var result: [String: JSONValue?] = [:]
        for (name, entry) in outcome.changes { result[name] = .some(entry?.value) }
        return result
    }

    @Test func mergesWithoutReplacing() throws {
        let outcome = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true), ("streak", 3, false)]), incoming: ["streak": 4, "coach": "maya"],
            source: .app, settings: settings)
        #expect(changes(outcome) == ["streak": .some(4), "coach": .some("maya")])
        #expect(outcome.warnings.isEmpty)
    }

    @Test func backendNullRemoves() throws {
        let outcome = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true)]), incoming: ["plan": nil], source: .backend, settings: settings)
        #expect(outcome.changes.count == 1 && outcome.changes[0].name == "plan" && outcome.changes[0].entry == nil)
    }

    @Test func appNeverRemovesWhatTheBackendSet() throws {
        let outcome = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true), ("color", "red", false)]), incoming: ["plan": nil, "color": nil],
            source: .app, settings: settings)
        #expect(outcome.changes.map(\.name) == ["color"])
        #expect(outcome.warnings.map(\.code) == [.attributeProtected])
    }

    @Test func appChangingABackendKeyKeepsTheBackendClaim() throws {
        let outcome = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true)]), incoming: ["plan": "free"], source: .app, settings: settings)
        #expect(outcome.changes.first?.entry == AttributeEntry(value: "free", setByBackend: true))
    }

    @Test func protectedAttributesAreTheBackendsAlone() throws {
        var settings = TenantSettings()
        settings.protectedAttributes = ["tier"]
        let fromApp = try AttributeMerge.merge(stored: [], incoming: ["tier": "gold"], source: .app, settings: settings)
        #expect(fromApp.changes.isEmpty && fromApp.warnings.map(\.code) == [.attributeProtected])
        let fromBackend = try AttributeMerge.merge(
            stored: [], incoming: ["tier": "gold"], source: .backend, settings: settings)
        #expect(fromBackend.changes.map(\.name) == ["tier"])
    }

    @Test func noOpChangesNothing() throws {
        let outcome = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true), ("n", ["a": [1, 2]], false)]),
            incoming: ["plan": "pro", "n": ["a": [1, 2]], "absent": nil], source: .backend, settings: settings)
        // Re-sending the backend's own values changes nothing; `n` would be claimed by the backend.
        #expect(outcome.changes.map(\.name) == ["n"])
        let fromApp = try AttributeMerge.merge(
            stored: stored([("plan", "pro", true)]), incoming: ["plan": "pro"], source: .app, settings: settings)
        #expect(fromApp.changes.isEmpty)
    }

    @Test func limitsNameEveryOffendingKey() {
        let long = String(repeating: "k", count: 129)
        let big = JSONValue.string(String(repeating: "x", count: 1100))
        do {
            _ = try AttributeMerge.merge(
                stored: [], incoming: [long: 1, "$secret": 1, "big": big, "fine": 1], source: .backend,
                settings: settings)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalidAttributes)
            let keys = error.details?["keys"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(Set(keys) == [long, "$secret", "big"])
        }
    }

    @Test func keyCountLimitCountsStoredKeysButNotServerOnes() throws {
        var limits = TenantSettings()
        limits.attributeLimits.maxKeys = 3
        let current = stored([("a", 1, false), ("b", 1, false), ("$notificationPermission", "authorized", false)])
        _ = try AttributeMerge.merge(stored: current, incoming: ["c": 1], source: .app, settings: limits)
        do {
            _ = try AttributeMerge.merge(stored: current, incoming: ["c": 1, "d": 1], source: .app, settings: limits)
            Issue.record("accepted a fourth key")
        } catch {
            #expect(error.code == .invalidAttributes)
            #expect(Set(error.details?["keys"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["c", "d"])
        }
    }

    @Test func fillInOnlyTakesMissingKeysWithinTheLimit() {
        let target = stored([("plan", "pro", true)])
        let source = stored([
            ("plan", "free", false), ("color", "red", false), ("size", "m", false),
            ("$notificationPermission", "denied", false),
        ])
        let fill = AttributeMerge.fillIn(target: target, source: source, maxKeys: 2)
        #expect(fill.map(\.name) == ["color", "$notificationPermission"])
    }
}

@Suite struct TenantSettingsTests {
    @Test func patchesKnownFieldsAndRefusesTheRest() throws {
        let patched = try TenantSettings().applying([
            "requireVerification": true, "protectedAttributes": ["tier"], "attributeLimits": ["maxKeys": 10],
        ])
        #expect(
            patched.requireVerification && patched.protectedAttributes == ["tier"]
                && patched.attributeLimits.maxKeys == 10)
        #expect(patched.allowAnonymous)
        for bad: JSONObject in [
            ["nope": true], ["requireVerification": "yes"], ["attributeLimits": ["maxKeys": 0]],
            ["protectedAttributes": [1]],
        ] {
            #expect(throws: IdentityError.self) { try TenantSettings().applying(bad) }
        }
        #expect(try TenantSettings.decode(patched.json).settings == patched)
    }
}

@Suite struct EventRulesTests {
    let now = Timestamp(millis: 1_800_000_000_000)

    @Test func validBatchKeepsClientTimestamps() throws {
        let events = try EventRules.validate(
            [
                ["id": "1", "name": "open", "timestamp": "2026-01-01T00:00:00.500Z"],
                ["id": "2", "name": "$session.start", "properties": ["a": 1]],
            ],
            receivedAt: now)
        #expect(events[0].timestamp.rfc3339 == "2026-01-01T00:00:00.500Z")
        #expect(events[1].timestamp == now && events[1].propertiesJSON == "{\"a\":1}")
    }

    @Test func refusals() {
        func code(_ events: [JSONValue]) -> String? {
            do {
                _ = try EventRules.validate(events, receivedAt: now)
                return nil
            } catch { return error.code.rawValue }
        }
        #expect(code(Array(repeating: ["id": "x", "name": "n"], count: 501)) == "batch_too_large")
        #expect(code(Array(repeating: ["id": "x", "name": "n"], count: 500)) == nil)
        #expect(code([["id": "1", "name": "$subscriber.merged"]]) == "invalid_event")
        #expect(code([["id": "1", "name": .string(String(repeating: "n", count: 129))]]) == "invalid_event")
        // Limits count characters, not bytes: 128 two-byte characters fit (256 bytes), 129 do not.
        #expect(code([["id": .string(String(repeating: "é", count: 128)), "name": "n"]]) == nil)
        #expect(code([["id": .string(String(repeating: "é", count: 129)), "name": "n"]]) == "invalid_event")
        #expect(code([["id": "1", "name": .string(String(repeating: "é", count: 128))]]) == nil)
        #expect(code([["id": "1", "name": .string(String(repeating: "é", count: 129))]]) == "invalid_event")
        #expect(code([["id": "", "name": "n"]]) == "invalid_event")
        #expect(code([["id": "1", "name": "n", "timestamp": "yesterday"]]) == "invalid_event")
        #expect(code([["id": "1", "name": "n", "properties": [1]]]) == "invalid_event")
        #expect(code([["id": "1", "name": "n", "extra": 1]]) == "invalid_event")
        #expect(code([]) == "invalid_request")
    }
}
