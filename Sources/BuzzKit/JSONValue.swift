import Foundation

/// A JSON value for attributes and event properties, written as plain Swift literals.
///
/// ```swift
/// let properties: [String: JSONValue] = ["plan": "pro", "streak": 4, "ratio": 0.5, "tags": ["a"], "gone": nil]
/// ```
///
/// A number that is not finite (`.nan`, `.infinity`) becomes `null`: JSON has no spelling for it.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// A number; `null` when it is not finite.
    public static func number(_ value: Double) -> JSONValue {
        value.isFinite ? .double(value) : .null
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object: [String: JSONValue] = [:]
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

// MARK: - Serialization

extension JSONValue {
    /// The value as compact JSON text. Object keys are sorted so that equal values give equal
    /// text (the identify fingerprint relies on it).
    public var jsonText: String {
        var out = ""
        append(to: &out)
        return out
    }

    func append(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            // Non-finite numbers have no JSON spelling; `.double(.nan)` built by hand still writes null.
            if !value.isFinite {
                out += "null"
            } else if value == value.rounded(), abs(value) < 1e15 {
                out += String(Int64(value))
            } else {
                out += "\(value)"
            }
        case .string(let value): JSONValue.appendString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.append(to: &out)
            }
            out += "]"
        case .object(let members):
            JSONValue.appendObject(members, to: &out)
        }
    }

    static func appendObject(_ members: [String: JSONValue], to out: inout String) {
        out += "{"
        var first = true
        for key in members.keys.sorted() {
            if !first { out += "," }
            first = false
            appendString(key, to: &out)
            out += ":"
            members[key]!.append(to: &out)
        }
        out += "}"
    }

    /// A JSON string literal (RFC 8259 §7): quote, backslash and control characters escaped.
    static func appendString(_ value: String, to out: inout String) {
        out += "\""
        var plainStart = value.unicodeScalars.startIndex
        let scalars = value.unicodeScalars
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escape = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escape = nil
            }
            if let escape {
                out.unicodeScalars.append(contentsOf: scalars[plainStart..<index])
                out += escape
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        out.unicodeScalars.append(contentsOf: scalars[plainStart..<scalars.endIndex])
        out += "\""
    }
}
