/// A JSON object: string keys mapped to values, remembering insertion order.
///
/// Setting an existing key replaces its value in place; the parser refuses a document that
/// repeats a key, so a parsed object never had two. Equality and hashing ignore order, as
/// RFC 8259 §4 calls objects unordered.
///
/// ```swift
/// var object: JSONObject = ["b": 1, "a": 2]
/// object["c"] = true
/// object.keys   // ["b", "a", "c"]
/// ```
package struct JSONObject: Sendable {
    /// Keys in insertion order.
    package private(set) var keys: [String]
    /// Values, parallel to `keys`.
    private var values: [JSONValue]
    /// Key → position, built only past `indexThreshold`: most objects are small and a
    /// linear scan beats hashing there.
    private var index: [String: Int]?

    private static let indexThreshold = 16

    /// An empty object.
    package init() {
        keys = []
        values = []
        index = nil
    }

    /// An object from pairs; a repeated key keeps its first position and last value.
    package init(_ pairs: some Sequence<(String, JSONValue)>) {
        self.init()
        // Objects are mostly built once from a literal: size the arrays up front, not by doubling.
        keys.reserveCapacity(pairs.underestimatedCount)
        values.reserveCapacity(pairs.underestimatedCount)
        for (key, value) in pairs { self[key] = value }
    }

    /// Number of members.
    package var count: Int { keys.count }

    /// Whether there are no members.
    package var isEmpty: Bool { keys.isEmpty }

    /// Position of `key`, if present.
    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return keys.firstIndex(of: key)
    }

    /// The value for `key`; assigning `nil` removes the member (assign `.null` to store JSON null).
    package subscript(key: String) -> JSONValue? {
        get {
            position(of: key).map { values[$0] }
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            if let position = position(of: key) {
                values[position] = newValue
                return
            }
            append(key, newValue)
        }
    }

    /// Room for `count` members without growing (the parser's objects start with a few).
    package mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
    }

    /// Adds a member known to be new at the end, keeping the index (if any) current.
    private mutating func append(_ key: String, _ value: JSONValue) {
        keys.append(key)
        values.append(value)
        if index != nil {
            index![key] = keys.count - 1
        } else if keys.count > Self.indexThreshold {
            rebuildIndex()
        }
    }

    /// Appends a member whose key is not present yet; returns false, changing nothing, if it is.
    /// One lookup, as for an assignment: the parser uses it to refuse repeated member names.
    package mutating func insertNew(_ key: String, _ value: JSONValue) -> Bool {
        guard position(of: key) == nil else { return false }
        append(key, value)
        return true
    }

    /// Removes `key` and returns its value; later members keep their relative order.
    @discardableResult
    package mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let position = position(of: key) else { return nil }
        keys.remove(at: position)
        let removed = values.remove(at: position)
        if keys.count > Self.indexThreshold { rebuildIndex() } else { index = nil }
        return removed
    }

    /// Whether `key` is present.
    package func contains(key: String) -> Bool {
        position(of: key) != nil
    }

    private mutating func rebuildIndex() {
        var built: [String: Int] = [:]
        built.reserveCapacity(keys.count)
        for (position, key) in keys.enumerated() { built[key] = position }
        index = built
    }
}

extension JSONObject: Sequence {
    /// Iterates `(key, value)` in insertion order.
    package struct Iterator: IteratorProtocol {
        private let object: JSONObject
        private var position = 0

        fileprivate init(_ object: JSONObject) { self.object = object }

        /// The next member.
        package mutating func next() -> (key: String, value: JSONValue)? {
            guard position < object.keys.count else { return nil }
            defer { position += 1 }
            return (object.keys[position], object.values[position])
        }
    }

    /// An iterator over members in insertion order.
    package func makeIterator() -> Iterator { Iterator(self) }

    /// Number of members (lets `Array(object)` reserve exactly).
    package var underestimatedCount: Int { keys.count }
}

extension JSONObject: Hashable {
    /// Same members with equal values, in any order.
    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.keys == rhs.keys { return lhs.values == rhs.values }
        for (key, value) in lhs where rhs[key] != value { return false }
        return true
    }

    /// Order-independent: member hashes are summed, so equal objects hash alike.
    package func hash(into hasher: inout Hasher) {
        var sum = 0
        for (key, value) in self {
            var member = Hasher()
            member.combine(key)
            member.combine(value)
            sum &+= member.finalize()
        }
        hasher.combine(count)
        hasher.combine(sum)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object whose members keep the literal's order. A literal's keys must differ, as in a
    /// `Dictionary` literal (which traps); debug builds check it. Release builds append without
    /// looking: looking up each key among the ones before cost ~20k instructions per identify
    /// (callgrind: nine literals, a rendered subscriber the largest).
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        assert(Set(elements.map(\.0)).count == elements.count, "repeated key in a JSONObject literal")
        keys = []
        values = []
        index = nil
        if elements.isEmpty { return }  // `[:]`, a default argument on many calls
        keys.reserveCapacity(elements.count)
        values.reserveCapacity(elements.count)
        for (key, value) in elements {
            keys.append(key)
            values.append(value)
        }
        if keys.count > Self.indexThreshold { rebuildIndex() }
    }
}

extension JSONObject: CustomStringConvertible {
    /// The compact JSON text.
    package var description: String { JSONValue.object(self).jsonString }
}
