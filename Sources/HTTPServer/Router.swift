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

    // The trie holds slots into `handlers`; see `RouteTrie` for why it is not generic.
    private var trie = RouteTrie()
    private var handlers: [Handler] = []

    package init() {}

    /// Adds a route, e.g. `add(.GET, "/v1/subscribers/:id/events", handler)`.
    /// A second route with the same method and shape replaces the first.
    package mutating func add(_ method: HTTPMethod, _ path: String, _ handler: Handler) {
        trie.add(method, path, slot: handlers.count)
        handlers.append(handler)
    }

    /// Matches a request path (without query). Parameter values are percent-decoded;
    /// a value that does not decode to UTF-8 makes the route not match.
    package func match(_ method: HTTPMethod, path: Substring) -> Match {
        switch trie.match(method, path: path) {
        case .found(let slot, let parameters): .found(handlers[slot], parameters: parameters)
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed: allowed)
        case .notFound: .notFound
        }
    }
}
