/// A JSON document (RFC 8259) as a value.
///
/// Numbers keep their literal text so a 64-bit id or a long decimal survives a round trip
/// untouched; ask ``intValue`` or ``doubleValue`` when you need arithmetic.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"n": 12345678901234567890}"#.utf8))
/// value["n"]?.intValue   // nil: out of Int64 range, but the text is kept
/// ```
package enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number as its validated literal text, e.g. `"-1.5e3"`; two spellings of one
    /// number (`1.0`, `1`) are different values.
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, in insertion order.
    case object(JSONObject)
}

// MARK: - Accessors

extension JSONValue {
    /// The string, if this is a string.
    package var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The boolean, if this is `true` or `false`.
    package var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The integer, if this is a number written without fraction or exponent that fits Int64.
    package var intValue: Int64? {
        guard case .number(let text) = self else { return nil }
        // Int64(_:) would also accept "+1"; the parser never produces that, literals never do.
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") })
        else { return nil }
        return Int64(text)
    }

    /// The number as a Double (nearest value; huge exponents give ±infinity).
    package var doubleValue: Double? {
        if case .number(let text) = self { Double(text) } else { nil }
    }

    /// The object, if this is an object.
    package var objectValue: JSONObject? {
        if case .object(let value) = self { value } else { nil }
    }

    /// The elements, if this is an array.
    package var arrayValue: [JSONValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// Whether this is `null`.
    package var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// Whether this is a number.
    package var isNumber: Bool {
        if case .number = self { true } else { false }
    }

    /// The member named `key` when this is an object; nil otherwise or when absent.
    package subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

// MARK: - Number construction

extension JSONValue {
    /// A number from an integer.
    package init(_ integer: some BinaryInteger) {
        self = .number(String(integer))
    }

    /// A number from a finite Double; Swift's shortest round-trip spelling is valid JSON.
    package init(_ double: Double) {
        precondition(double.isFinite, "JSON has no NaN or infinity")
        self = .number(double.description)
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral {
    /// `null`.
    package init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// `true` or `false`.
    package init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer number.
    package init(integerLiteral value: Int64) { self = .number(String(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A number from a finite Double.
    package init(floatLiteral value: Double) { self.init(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string.
    package init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array.
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object whose members keep the literal's order.
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    package var description: String { jsonString }
}
