import JSON

/// The attribute rules of API.md §7, as a pure function over the stored map and one call's input.
package enum AttributeMerge {
    /// Who is writing: the backend may remove, the app may not remove what the backend set.
    package enum Source: Sendable, Equatable {
        case app
        case backend
    }

    /// The changes to store and the warnings to answer with. Empty `changes` means a no-op.
    package struct Outcome: Sendable {
        package var changes: [(name: String, entry: AttributeEntry?)] = []
        package var warnings: [IdentityWarning] = []
        package init() {}
    }

    /// Merges `incoming` into `stored`.
    /// - Throws: `invalid_attributes` naming every offending key, before anything is decided.
    package static func merge(
        stored: [(name: String, entry: AttributeEntry)], incoming: JSONObject, source: Source,
        settings: TenantSettings
    ) throws(IdentityError) -> Outcome {
        try validate(incoming, limits: settings.attributeLimits)

        var current: [String: AttributeEntry] = [:]
        for (name, entry) in stored { current[name] = entry }
        let protected = Set(settings.protectedAttributes)
        var outcome = Outcome()
        var protectedHits: [String] = []

        for (name, value) in incoming {
            let existing = current[name]
            if source == .app && protected.contains(name) {
                protectedHits.append(name)
                continue
            }
            if value.isNull {
                guard let existing else { continue }
                if source == .app && existing.setByBackend {
                    protectedHits.append(name)
                    continue
                }
                current[name] = nil
                outcome.changes.append((name, nil))
                continue
            }
            // A backend write claims the key; an app write keeps the backend's claim so the
            // app still cannot remove it later.
            let entry = AttributeEntry(
                value: value, setByBackend: source == .backend || (existing?.setByBackend ?? false))
            if existing != entry {
                current[name] = entry
                outcome.changes.append((name, entry))
            }
        }

        // Server-maintained `$` keys do not count against the tenant's limit.
        if current.keys.filter({ !$0.hasPrefix("$") }).count > settings.attributeLimits.maxKeys {
            let added = outcome.changes.filter { change in
                change.entry != nil && !stored.contains { $0.name == change.name }
            }.map(\.name)
            throw invalid(
                keys: added,
                "A subscriber may hold at most \(settings.attributeLimits.maxKeys) attributes.")
        }
        if !protectedHits.isEmpty {
            outcome.warnings.append(
                IdentityWarning(
                    code: .attributeProtected,
                    message:
                        "Ignored changes to attributes the app may not change: \(protectedHits.joined(separator: ", "))."
                ))
        }
        return outcome
    }

    /// Checks keys and value sizes; `$` keys belong to the server.
    package static func validate(_ incoming: JSONObject, limits: AttributeLimits) throws(IdentityError) {
        var bad: [String] = []
        var reasons: [String] = []
        for (name, value) in incoming {
            if name.isEmpty || name.count > limits.maxKeyLength {
                bad.append(name)
                reasons.append("keys are 1 to \(limits.maxKeyLength) characters")
            } else if name.hasPrefix("$") {
                bad.append(name)
                reasons.append("keys starting with $ belong to the server")
            } else if value.serializedByteCount > limits.maxValueBytes {
                bad.append(name)
                reasons.append("each value is at most \(limits.maxValueBytes) bytes as JSON")
            }
        }
        if !bad.isEmpty {
            var seen = Set<String>()
            let unique = reasons.filter { seen.insert($0).inserted }
            throw invalid(keys: bad, "Invalid attributes: " + unique.joined(separator: "; ") + ".")
        }
    }

    /// Fills keys the target lacks with the source's (an absorb): the identified person's own
    /// values always win. Keys beyond the limit are left behind rather than failing the merge.
    package static func fillIn(
        target: [(name: String, entry: AttributeEntry)], source: [(name: String, entry: AttributeEntry)],
        maxKeys: Int
    ) -> [(name: String, entry: AttributeEntry?)] {
        let have = Set(target.map(\.name))
        var room = maxKeys - have.filter { !$0.hasPrefix("$") }.count
        var changes: [(name: String, entry: AttributeEntry?)] = []
        for (name, entry) in source where !have.contains(name) {
            // Server-maintained keys ($notificationPermission) do not count against the limit.
            if !name.hasPrefix("$") {
                guard room > 0 else { continue }
                room -= 1
            }
            changes.append((name, entry))
        }
        return changes
    }

    private static func invalid(keys: [String], _ message: String) -> IdentityError {
        IdentityError(
            code: .invalidAttributes, message: message,
            details: ["keys": .array(keys.map { .string($0) })])
    }
}
