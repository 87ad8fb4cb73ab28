import HTTP1

/// Routes method + path to a value (the application's handler), with `:name` path parameters.
/// Interface only; implementation pending.
package struct Router<Handler: Sendable>: Sendable {
    package enum Match {
        case found(Handler, parameters: [String: String])
        /// The path exists but not for this method; `allowed` lists the methods it has.
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    package init() {}

    /// Adds a route, e.g. `add(.GET, "/v1/subscribers/:id/events", handler)`.
    package mutating func add(_ method: HTTPMethod, _ path: String, _ handler: Handler) {
        fatalError("pending")
    }

    /// Matches a request path (without query). Parameter values are percent-decoded;
    /// a value that does not decode to UTF-8 makes the route not match.
    package func match(_ method: HTTPMethod, path: Substring) -> Match {
        fatalError("pending")
    }
}
