import HTTP1
import HTTPServer
import Identity
import JSON

/// One request as a handler sees it: the HTTP request, its path parameters, its id, and the
/// caller once authenticated.
package struct RequestContext: Sendable {
    package var request: HTTPRequest
    package var parameters: PathParameters
    package var requestID: String
    package var now: Timestamp
    package var caller: Caller?
    /// The key the call was made with, once authenticated.
    package var key: APIKeyRecord?
    /// The application's store and metrics, held without counting references: the application
    /// owns both and is alive for as long as any of its requests is (a request's pending
    /// completions hold it), and every request on both event loops retained and released these
    /// same two objects, each count an atomic write to a cache line the other core wants too.
    package unowned(unsafe) let store: any IdentityStore
    package unowned(unsafe) let metrics: Metrics

    /// A path parameter the route declares.
    package func parameter(_ name: String) throws(APIError) -> String {
        guard let value = parameters[name] else { throw .invalidRequest("Missing path parameter '\(name)'.") }
        return value
    }

    /// The authenticated caller; routes that need a key have one by the time the handler runs.
    package func requireCaller() throws(APIError) -> Caller {
        guard let caller else { throw .unauthorized }
        return caller
    }

    /// `raw` as a subscriber id, checked against API.md §3 and the tenant's blocked ids before
    /// any work is queued; the domain takes the checked id and does not check it again.
    package func subscriberID(_ raw: String) throws -> SubscriberID {
        // The tenant alone, not a copy of the whole caller (its proof and callback too).
        guard let tenant = caller?.tenant else { throw APIError.unauthorized }
        return try IDRules.subscriberID(raw, blocked: tenant.settings.blockedExternalIds)
    }

    /// The `id` path parameter as a checked subscriber id.
    package func subscriberIDParameter() throws -> SubscriberID {
        try subscriberID(parameter("id"))
    }

    /// Query parameters, percent-decoded (`+` is a space, as forms send it).
    package var query: [String: String] {
        guard let raw = request.head.query else { return [:] }
        var result: [String: String] = [:]
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0]) else { continue }
            result[name] = parts.count > 1 ? percentDecode(parts[1]) ?? "" : ""
        }
        return result
    }

    /// The body as a JSON object (`invalid_json`, `unsupported_media_type` otherwise).
    /// An empty body is an empty object, so `{}`-only calls may omit it.
    package func jsonBody() throws(APIError) -> JSONObject {
        let body = request.body
        if body.isEmpty { return [:] }
        try requireJSONMediaType()
        let value: JSONValue
        do {
            value = try JSONParser.parse(body, maxDepth: JSONLimits.maxDepth)
        } catch {
            throw APIError(.invalidJSON, message: "The body is not valid JSON: \(error.message)")
        }
        guard let object = value.objectValue else {
            throw APIError(.invalidJSON, message: "The body must be a JSON object.")
        }
        return object
    }
}

extension RequestContext {
    /// `unsupported_media_type` unless the body, if labelled, is labelled as JSON.
    func requireJSONMediaType() throws(APIError) {
        guard let type = request.headers["Content-Type"] else { return }
        guard isJSONMediaType(type) else {
            throw APIError(.unsupportedMediaType, message: "Send the body as application/json.")
        }
    }
}

/// How deep JSON may nest: deep enough for any real attribute, shallow enough that no input
/// can exhaust the stack.
package enum JSONLimits {
    package static let maxDepth = 32
}

/// Percent-decodes a query component; nil when it is not valid UTF-8 after decoding.
func percentDecode(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count)
    var iterator = text.utf8.makeIterator()
    func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: b - 48
        case 65...70: b - 55
        case 97...102: b - 87
        default: nil
        }
    }
    while let b = iterator.next() {
        if b == 37 {  // %
            guard let h = iterator.next().flatMap(hex), let l = iterator.next().flatMap(hex) else { return nil }
            bytes.append(h << 4 | l)
        } else {
            bytes.append(b == 43 ? 32 : b)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

// MARK: - Reading fields of a JSON body, each failure naming the field

extension JSONObject {
    /// A string field, or nil when absent or null.
    func string(_ key: String, path: String = "") throws(APIError) -> String? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let string = value.stringValue else { throw .invalidRequest("'\(path)\(key)' must be a string.") }
        return string
    }

    func requireString(_ key: String, path: String = "") throws(APIError) -> String {
        guard let string = try string(key, path: path) else { throw .invalidRequest("'\(path)\(key)' is required.") }
        return string
    }

    func bool(_ key: String, path: String = "") throws(APIError) -> Bool? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let bool = value.boolValue else { throw .invalidRequest("'\(path)\(key)' must be true or false.") }
        return bool
    }

    func object(_ key: String, path: String = "") throws(APIError) -> JSONObject? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let object = value.objectValue else { throw .invalidRequest("'\(path)\(key)' must be an object.") }
        return object
    }

    /// Refuses fields the endpoint does not define, so a typo is an error rather than ignored.
    ///
    /// An array scanned, not a `Set`: a body has a few fields and an endpoint defines at most a
    /// dozen, short enough that `==` compares them in place, where a set literal was built and
    /// hashed on every request (3k instructions of an identify's event loop, callgrind).
    func allowOnly(_ allowed: [String], path: String = "") throws(APIError) {
        for key in keys where !allowed.contains(key) {
            throw .invalidRequest("Unknown field '\(path)\(key)'.")
        }
    }
}
