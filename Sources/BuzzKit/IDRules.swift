/// The server's rules the SDK checks before queueing, so that a call the server would refuse
/// for good never blocks or poisons the queue (a batch of events is all or nothing, API.md §8).
enum IDRules {
    /// Placeholders an app bug sends for every user (API.md §3).
    private static let placeholders: Set<String> = [
        "null", "nil", "none", "undefined", "nan", "0", "-1", "anonymous", "guest", "unknown", "[object object]",
        "true", "false", "id", "user_id", "na", "all", "00000000-0000-0000-0000-000000000000",
    ]

    /// Why `id` cannot be an external id, or nil when it can.
    static func externalIdProblem(_ id: String) -> String? {
        let scalars = id.unicodeScalars
        if scalars.isEmpty || scalars.count > 255 { return "an external id has 1 to 255 characters" }
        if scalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return "an external id has no control characters"
        }
        if scalars.first!.properties.isWhitespace || scalars.last!.properties.isWhitespace {
            return "an external id has no leading or trailing whitespace"
        }
        if id.hasPrefix("anon_") { return "an external id cannot start with anon_" }
        var bare = id.lowercased()
        while bare.count >= 2, let first = bare.first, first == bare.last, first == "\"" || first == "'" {
            bare = String(bare.dropFirst().dropLast())
        }
        if placeholders.contains(bare) { return "\"\(id)\" is a placeholder, not a user id" }
        return nil
    }

    /// An address the server will take: one `@`, something before it, a dotted domain, no spaces.
    static func looksLikeEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, email.utf8.count <= 254, email.utf8.count >= 5 else { return false }
        let domain = parts[1]
        guard domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix(".") else { return false }
        return !email.unicodeScalars.contains { $0.properties.isWhitespace || $0.value < 0x20 }
    }

    /// 1 to 128 characters; `$` names are the server's except the two session events.
    static func isValidEventName(_ name: String) -> Bool {
        guard !name.isEmpty, name.count <= 128 else { return false }
        return !name.hasPrefix("$") || name == "$session.start" || name == "$session.end"
    }
}
