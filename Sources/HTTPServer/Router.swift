import HTTP1
import StringBytes

/// Routes method + path to a slot (the index of the application's handler), with `:name`
/// path parameters.
///
/// A trie over path segments: literal segments win over a parameter at the same depth, and a
/// parameter is tried when the literal branch finds nothing. `HEAD` falls back to `GET`
/// (RFC 9110 §9.3.2: HEAD is GET without the body).
///
/// Not generic over the handler on purpose: a generic type used from another module runs
/// unspecialized, paying run-time metadata lookups on every match (~300 instructions of a
/// `/healthz`), while this compiles to concrete code. The caller keeps its handlers in an
/// array and looks the slot up.
///
/// Segments are read from the path's UTF-8 in place (no array of substrings, no `String` per
/// segment); literal children are few per node, so a byte comparison beats hashing.
///
/// ```swift
/// var router = Router()
/// router.add(.GET, "/v1/subscribers/:id", slot: 0)
/// router.match(.GET, target: "/v1/subscribers/abc?x=1")   // .found(slot: 0, parameters: ["id": "abc"])
/// ```
package struct Router: Sendable {
    package enum Match {
        case found(slot: Int, parameters: PathParameters)
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    private struct Literal: Sendable {
        var bytes: [UInt8]
        var child: Int
    }

    private struct Endpoint: Sendable {
        var method: HTTPMethod
        var slot: Int
    }

    /// A node as `add` builds it.
    private struct Node: Sendable {
        var literals: [Literal] = []
        var parameterName: String?
        var parameterChild: Int?
        var endpoints: [Endpoint] = []
    }

    // Nodes live in one array and refer to each other by index: value semantics, no classes.
    private var nodes: [Node] = [Node()]

    /// The same trie as `nodes`, flattened for `match` into arrays of plain values, remade by
    /// every `add`. Reading a node's nested arrays retained and released each of them (~4 of
    /// the 70 atomic reference counts a `/healthz` made); a plain value is read in place.
    private var table = Table()

    private struct Table: Sendable {
        struct Node: Sendable {
            /// `literals[literalStart..<literalEnd]`, `endpoints[endpointStart..<endpointEnd]`.
            var literalStart = 0, literalEnd = 0
            var endpointStart = 0, endpointEnd = 0
            /// The parameter child and the index of its name in `parameterNames`; -1 for none.
            var parameterChild = -1, parameterName = -1
        }
        struct Literal: Sendable {
            /// `bytes[start..<end]`.
            var start: Int, end: Int
            var child: Int
        }
        var nodes: [Node] = [Node()]
        var literals: [Literal] = []
        var bytes: [UInt8] = []
        var endpoints: [Endpoint] = []
        var parameterNames: [String] = []
    }

    package init() {}

    /// Adds (or, for the same method and shape, replaces) the route to `slot`,
    /// e.g. `add(.GET, "/v1/subscribers/:id/events", slot: 3)`.
    package mutating func add(_ method: HTTPMethod, _ path: String, slot: Int) {
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
                let bytes = Array(segment.utf8)
                if let existing = nodes[current].literals.first(where: { $0.bytes == bytes }) {
                    current = existing.child
                } else {
                    nodes.append(Node())
                    nodes[current].literals.append(Literal(bytes: bytes, child: nodes.count - 1))
                    current = nodes.count - 1
                }
            }
        }
        nodes[current].endpoints.removeAll { $0.method == method }
        nodes[current].endpoints.append(Endpoint(method: method, slot: slot))
        table = Self.flatten(nodes)
    }

    private static func flatten(_ nodes: [Node]) -> Table {
        var table = Table()
        table.nodes = nodes.map { node in
            var flat = Table.Node()
            flat.literalStart = table.literals.count
            for literal in node.literals {
                table.literals.append(
                    Table.Literal(
                        start: table.bytes.count, end: table.bytes.count + literal.bytes.count, child: literal.child))
                table.bytes += literal.bytes
            }
            flat.literalEnd = table.literals.count
            flat.endpointStart = table.endpoints.count
            table.endpoints += node.endpoints
            flat.endpointEnd = table.endpoints.count
            if let child = node.parameterChild, let name = node.parameterName {
                flat.parameterChild = child
                flat.parameterName = table.parameterNames.count
                table.parameterNames.append(name)
            }
            return flat
        }
        return table
    }

    /// Matches the path of a request target, what comes before any `?`, read in the target's
    /// bytes in place: cutting the path out first as a `Substring` (`HTTPRequestHead.path`) and
    /// reading that cost ~300 instructions more a routed request (callgrind). Parameter values
    /// are percent-decoded; a value that does not decode to UTF-8 makes the route not match.
    package func match(_ method: HTTPMethod, target: String) -> Match {
        withUTF8Bytes(target) { bytes in
            let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
            return match(method, pathBytes: UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
    }

    private func match(_ method: HTTPMethod, pathBytes: UnsafeBufferPointer<UInt8>) -> Match {
        var parameters = PathParameters()
        guard let node = find(pathBytes, from: 0, node: 0, parameters: &parameters) else { return .notFound }
        let endpoints = table.nodes[node].endpointStart..<table.nodes[node].endpointEnd
        if let endpoint = endpoints.first(where: { table.endpoints[$0].method == method }) {
            return .found(slot: table.endpoints[endpoint].slot, parameters: parameters)
        }
        // RFC 9110 §9.3.2: HEAD is GET without the body.
        if method == .HEAD, let endpoint = endpoints.first(where: { table.endpoints[$0].method == .GET }) {
            return .found(slot: table.endpoints[endpoint].slot, parameters: parameters)
        }
        var allowed = endpoints.map { table.endpoints[$0].method }
        if allowed.contains(.GET) && !allowed.contains(.HEAD) { allowed.append(.HEAD) }
        return .methodNotAllowed(allowed: allowed)
    }

    /// Depth-first from `start`: literal child first, then the parameter child. Empty segments
    /// are skipped (`//a/` is `/a`). Only nodes with endpoints end a match.
    private func find(
        _ path: UnsafeBufferPointer<UInt8>, from start: Int, node index: Int,
        parameters: inout PathParameters
    ) -> Int? {
        let slash = UInt8(ascii: "/")
        let node = table.nodes[index]
        var segmentStart = start
        while segmentStart < path.count, path[segmentStart] == slash { segmentStart += 1 }
        guard segmentStart < path.count else {
            return node.endpointStart == node.endpointEnd ? nil : index
        }
        var segmentEnd = segmentStart
        while segmentEnd < path.count, path[segmentEnd] != slash { segmentEnd += 1 }
        let segment = UnsafeBufferPointer(rebasing: path[segmentStart..<segmentEnd])

        for literalIndex in node.literalStart..<node.literalEnd {
            let literal = table.literals[literalIndex]
            guard isSegment(segment, literal) else { continue }
            if let found = find(path, from: segmentEnd, node: literal.child, parameters: &parameters) {
                return found
            }
            break  // literals of a node differ: no other one matches this segment
        }
        if node.parameterChild >= 0, let value = percentDecode(segment) {
            parameters.append(PathParameters.Parameter(name: table.parameterNames[node.parameterName], value: value))
            if let found = find(path, from: segmentEnd, node: node.parameterChild, parameters: &parameters) {
                return found
            }
            parameters.removeLast()
        }
        return nil
    }

    /// Whether a path segment is the literal: lengths first, where most literals differ, then
    /// the bytes. `elementsEqual` walked both sequences through iterators: a cached
    /// `GET /v1/subscribers/{id}` took 140 instructions more (callgrind, 23,444 → 23,304).
    private func isSegment(_ segment: UnsafeBufferPointer<UInt8>, _ literal: Table.Literal) -> Bool {
        guard segment.count == literal.end - literal.start else { return false }
        return table.bytes.withUnsafeBufferPointer { bytes in
            for offset in 0..<segment.count where bytes[literal.start + offset] != segment[offset] { return false }
            return true
        }
    }
}

/// A matched route's path parameters, decoded, in path order. Routes have one or two, so the
/// lookup by name scans them: a dictionary cost an allocation and two hashes per request.
package struct PathParameters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    struct Parameter: Sendable, Equatable {
        var name: String
        var value: String
    }
    /// The first parameter, held inline: most routes have one (`:id`), and an array of one was
    /// an allocation every routed request (~350 instructions of a GET, callgrind).
    private var first: Parameter?
    /// The ones after the first, in path order.
    private var rest: [Parameter] = []

    /// None: what a request has before it is routed. `[:]` went through the variadic
    /// dictionary-literal initialiser, an array made and mapped a request.
    package init() {}

    package init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { append(Parameter(name: name, value: value)) }
    }

    /// The decoded value of the parameter `name` (`:name` in the route), if the route has one.
    package subscript(name: String) -> String? {
        if let first, first.name == name { return first.value }
        return rest.first(where: { $0.name == name })?.value
    }

    package var isEmpty: Bool { first == nil }

    /// Adds the next parameter of the path (the router, as it matches).
    mutating func append(_ parameter: Parameter) {
        if first == nil { first = parameter } else { rest.append(parameter) }
    }

    /// Takes back the last one added (the router, leaving a branch that did not match).
    mutating func removeLast() {
        if rest.isEmpty { first = nil } else { rest.removeLast() }
    }
}

/// Decodes `%XX` escapes (RFC 3986 §2.1); nil for a malformed escape or invalid UTF-8.
func percentDecode(_ segment: UnsafeBufferPointer<UInt8>) -> String? {
    guard segment.contains(UInt8(ascii: "%")) else { return String(decoding: segment, as: UTF8.self) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(segment.count)
    var iterator = segment.makeIterator()
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

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
