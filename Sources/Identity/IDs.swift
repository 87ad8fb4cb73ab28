import StringBytes

/// The id rules of API.md §3. Pure functions: every caller validates before touching the store,
/// so an invalid id changes nothing.
package enum IDRules {
    /// `anon_` followed by exactly 21 of `A-Za-z0-9_-`.
    package static func isAnonymousID(_ id: String) -> Bool {
        withUTF8Bytes(id) { bytes in
            bytes.count == 26 && startsWithAnonPrefix(bytes) && bytes[5...].allSatisfy(isIDByte)
        }
    }

    /// Whether the id begins `anon_`, on its bytes in place (`hasPrefix` cost ~160 instructions,
    /// on every id of every request).
    private static func startsWithAnonPrefix(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count >= 5 && bytes[0] == UInt8(ascii: "a") && bytes[1] == UInt8(ascii: "n")
            && bytes[2] == UInt8(ascii: "o") && bytes[3] == UInt8(ascii: "n") && bytes[4] == UInt8(ascii: "_")
    }

    private static func startsWithAnonPrefix(_ id: String) -> Bool { withUTF8Bytes(id) { startsWithAnonPrefix($0) } }

    /// Ids a buggy app sends for every user; compared case-insensitively, also in quotes.
    package static let placeholderIDs: Set<String> = [
        "null", "nil", "none", "undefined", "nan", "0", "-1", "anonymous", "guest", "unknown",
        "[object object]", "true", "false", "id", "user_id", "na", "all",
        "00000000-0000-0000-0000-000000000000",
    ]

    /// Longest external id, in Unicode scalars.
    package static let maxExternalIDLength = 255

    /// Checks an external id; `blocked` are the tenant's own placeholders (any case).
    package static func validateExternalID(_ id: String, blocked: [String] = []) throws(IdentityError) {
        if startsWithAnonPrefix(id) {
            throw .invalidExternalID("An external id may not start with anon_; that prefix marks anonymous ids.")
        }
        // One pass over the bytes: printable ASCII, and something other than spaces.
        let (printableASCII, onlySpaces, count, edgeSpace) = withUTF8Bytes(id) { bytes in
            var printable = true
            var spaces = true
            for b in bytes {
                printable = printable && b >= 0x20 && b < 0x7F
                spaces = spaces && b == 0x20
            }
            return (printable, spaces, bytes.count, bytes.first == 0x20 || bytes.last == 0x20)
        }
        if printableASCII {
            // Printable ASCII, as nearly every real id is: the same checks on bytes, without the
            // Unicode property tables (SP is the only whitespace here, and there is no control).
            guard !onlySpaces else {
                throw .invalidExternalID("The external id is empty.")
            }
            guard count <= maxExternalIDLength else {
                throw .invalidExternalID("The external id is longer than \(maxExternalIDLength) characters.")
            }
            if edgeSpace {
                throw .invalidExternalID("The external id has leading or trailing whitespace.")
            }
            // The placeholder check below on bytes too: no lowercased copy, no Set hashing.
            if blocked.isEmpty {
                if isASCIIPlaceholder(id) {
                    throw .invalidExternalID("'\(id)' looks like a placeholder, not a user id.")
                }
                return
            }
        } else {
            try validateExternalIDScalars(id)
        }
        var folded = id.lowercased()
        // `count` (grapheme breaking) last: only a quoted id pays for it.
        for quote in ["\"", "'", "`"] where folded.hasPrefix(quote) && folded.hasSuffix(quote) && folded.count >= 2 {
            folded = String(folded.dropFirst().dropLast())
        }
        if placeholderIDs.contains(folded) || blocked.contains(where: { $0.lowercased() == folded }) {
            throw .invalidExternalID("'\(id)' looks like a placeholder, not a user id.")
        }
    }

    /// `placeholderIDs` as bytes, for `isASCIIPlaceholder`.
    private static let placeholderBytes: [[UInt8]] = placeholderIDs.map { Array($0.utf8) }
    private static let placeholderMaxLength = placeholderBytes.map(\.count).max() ?? 0
    /// Bit n set when some placeholder is n bytes long: most ids are of a length none has, and
    /// are told apart by one bit instead of a walk over the list (~200 instructions, callgrind).
    private static let placeholderLengths: UInt64 = placeholderBytes.reduce(0) { $0 | 1 << UInt64($1.count) }

    /// Whether a printable-ASCII id is a placeholder once lowercased and unquoted: the same
    /// answer as the general path below (quotes stripped in the same order), on the bytes in place.
    private static func isASCIIPlaceholder(_ id: String) -> Bool {
        func check(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            // Longer than any placeholder even with three pairs of quotes: nothing to compare.
            guard bytes.count <= placeholderMaxLength + 6 else { return false }
            var start = 0
            var end = bytes.count
            func strip(_ quote: UInt8) {
                if end - start >= 2 && bytes[start] == quote && bytes[end - 1] == quote {
                    start += 1
                    end -= 1
                }
            }
            strip(UInt8(ascii: "\""))
            strip(UInt8(ascii: "'"))
            strip(UInt8(ascii: "`"))
            let id = bytes[start..<end]
            guard id.count < 64, placeholderLengths & (1 << UInt64(id.count)) != 0 else { return false }
            return placeholderBytes.contains { placeholder in
                placeholder.count == id.count
                    && zip(placeholder, id).allSatisfy { $0 == ($1 >= 65 && $1 <= 90 ? $1 | 0x20 : $1) }
            }
        }
        return withUTF8Bytes(id, check)
    }

    /// The general case of `validateExternalID`: any Unicode.
    private static func validateExternalIDScalars(_ id: String) throws(IdentityError) {
        let scalars = id.unicodeScalars
        guard !scalars.isEmpty, scalars.contains(where: { !isWhitespace($0) }) else {
            throw .invalidExternalID("The external id is empty.")
        }
        guard scalars.count <= maxExternalIDLength else {
            throw .invalidExternalID("The external id is longer than \(maxExternalIDLength) characters.")
        }
        if scalars.contains(where: isControl) {
            throw .invalidExternalID("The external id contains a control character.")
        }
        if let first = scalars.first, let last = scalars.last, isWhitespace(first) || isWhitespace(last) {
            throw .invalidExternalID("The external id has leading or trailing whitespace.")
        }
    }

    /// Checks an `anonymousId` field: any `anon_…` that is not well formed is refused.
    package static func validateAnonymousID(_ id: String) throws(IdentityError) {
        guard isAnonymousID(id) else {
            throw .invalidAnonymousID("An anonymous id is anon_ followed by 21 characters of A-Z, a-z, 0-9, _ or -.")
        }
    }

    /// Checks an id in a path or a `subscriberId`: anonymous when it starts with `anon_`, else
    /// external. The result carries the proof of the check, so nothing downstream repeats it.
    package static func subscriberID(_ id: String, blocked: [String] = []) throws(IdentityError) -> SubscriberID {
        if startsWithAnonPrefix(id) {
            try validateAnonymousID(id)
            return SubscriberID(checked: id, isAnonymous: true)
        }
        try validateExternalID(id, blocked: blocked)
        return SubscriberID(checked: id, isAnonymous: false)
    }

    private static func isIDByte(_ b: UInt8) -> Bool {
        (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 95 || b == 45
    }

    private static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (s.value >= 0x7F && s.value < 0xA0) || s.properties.generalCategory == .control
    }

    private static func isWhitespace(_ s: Unicode.Scalar) -> Bool {
        s.properties.isWhitespace
    }
}

/// A subscriber id that passed the rules of §3 for its tenant, anonymous or external. Only
/// `IDRules.subscriberID` makes one: the API checks an id once, before queuing any work, and
/// the domain operations take this type instead of checking the string again.
package struct SubscriberID: Sendable, Hashable, CustomStringConvertible {
    package let value: String
    package let isAnonymous: Bool

    fileprivate init(checked value: String, isAnonymous: Bool) {
        self.value = value
        self.isAnonymous = isAnonymous
    }

    package var description: String { value }
}

/// A light check of an email address: one `@`, a dotted domain, no whitespace, at most 254 bytes.
/// Deliverability is the provider's business; this only catches values that cannot be an address.
package enum EmailRules {
    package static func validate(_ email: String) throws(IdentityError) {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        let ok =
            email.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty
            && parts[1].contains(".") && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
            && !email.unicodeScalars.contains { $0.properties.isWhitespace || $0.value < 0x20 }
        guard ok else {
            throw IdentityError(code: .invalidEmail, message: "'\(email)' is not an email address.")
        }
    }
}
