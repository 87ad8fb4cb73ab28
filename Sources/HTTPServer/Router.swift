import HTTP1

/// Routes method + path to a value (the application's handler), with `:name` path parameters.
///
/// A trie over path segments: literal segments win over a parameter at the same depth, and a
/// parameter is tried when the literal branch finds nothing. `HEAD` falls back to `GET`
/// (RFC 9110 §9.3.2: HEAD is GET without the body).
///
/// ```swift
/// var router = Router<String>()
/// router.add(.GET, "/v1/subscribers/:id", "show")
/// router.match(.GET, path: "/v1/subscribers/abc")   // .found("show", ["id": "abc"])
/// ```
package struct Router<Handler: Sendable>: Sendable {
    package enum Match {
        case found(Handler, parameters: [String: String])
        /// The path exists but not for this method; `allowed` lists the methods it has.
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    private struct Node: Sendable {
        var literals: [String: Int] = [:]
        var parameterName: String?
        var parameterChild: Int?
        var handlers: [(method: HTTPMethod, handler: Handler)] = []
    }

    // Nodes live in one array and refer to each other by index: value semantics, no classes.
    private var nodes: [Node] = [Node()]

    package init() {}

    /// Adds a route, e.g. `add(.GET, "/v1/subscribers/:id/events", handler)`.
    /// A second route with the same method and shape replaces the first.
    package mutating func add(_ method: HTTPMethod, _ path: String, _ handler: Handler) {
        var current = 0
        for segment in path.split(separator: "/") {
            if segment.hasPrefix(":") {
                let name = String(segment.dropFirst())
                if let child = nodes[current].parameterChild {
                    precondition(
                        nodes[current].parameterName == name,
                        "conflicting parameter names :\(nodes[current].parameterName ?? "") and :\(name) in \(path)")
                    current = child
                } else {
                    nodes.append(Node())
                    nodes[current].parameterName = name
                    nodes[current].parameterChild = nodes.count - 1
                    current = nodes.count - 1
                }
            } else {
                let literal = String(segment)
                if let child = nodes[current].literals[literal] {
                    current = child
                } else {
                    nodes.append(Node())
                    nodes[current].literals[literal] = nodes.count - 1
                    current = nodes.count - 1
                }
            }
        }
        nodes[current].handlers.removeAll { $0.method == method }
        nodes[current].handlers.append((method, handler))
    }

    /// Matches a request path (without query). Parameter values are percent-decoded;
    /// a value that does not decode to UTF-8 makes the route not match.
    package func match(_ method: HTTPMethod, path: Substring) -> Match {
        let segments = path.split(separator: "/")
        var parameters: [(String, String)] = []
        guard let node = find(segments[...], from: 0, parameters: &parameters) else { return .notFound }
        let handlers = nodes[node].handlers
        // Most routes have no parameter: skip building (and hashing into) a dictionary for them.
        let dictionary = parameters.isEmpty ? [:] : Dictionary(parameters, uniquingKeysWith: { _, last in last })
        if let entry = handlers.first(where: { $0.method == method }) {
            return .found(entry.handler, parameters: dictionary)
        }
        if method == .HEAD, let entry = handlers.first(where: { $0.method == .GET }) {
            return .found(entry.handler, parameters: dictionary)
        }
        var allowed = handlers.map(\.method)
        if allowed.contains(.GET) && !allowed.contains(.HEAD) { allowed.append(.HEAD) }
        return .methodNotAllowed(allowed: allowed)
    }

    /// Depth-first: literal child first, then the parameter child. Only nodes with handlers end a match.
    private func find(
        _ segments: ArraySlice<Substring>, from index: Int, parameters: inout [(String, String)]
    ) -> Int? {
        guard let segment = segments.first else {
            return nodes[index].handlers.isEmpty ? nil : index
        }
        let rest = segments.dropFirst()
        if let child = nodes[index].literals[String(segment)],
            let found = find(rest, from: child, parameters: &parameters)
        {
            return found
        }
        if let child = nodes[index].parameterChild, let name = nodes[index].parameterName,
            let value = Self.percentDecode(segment)
        {
            parameters.append((name, value))
            if let found = find(rest, from: child, parameters: &parameters) { return found }
            parameters.removeLast()
        }
        return nil
    }

    /// Decodes `%XX` escapes (RFC 3986 §2.1); nil for a malformed escape or invalid UTF-8.
    static func percentDecode(_ segment: Substring) -> String? {
        guard segment.utf8.contains(UInt8(ascii: "%")) else { return String(segment) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
