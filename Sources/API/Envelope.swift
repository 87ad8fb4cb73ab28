import HTTP1
import HTTPServer
import Identity
import JSON

/// The response envelope every `/v1` answer, `/healthz`, `/readyz` and every error uses (API.md §2).
package enum Envelope {
    /// Pre-encoded so every response does not build it again.
    static let jsonHeaders: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]

    package static func success(
        _ data: JSONValue, status: HTTPStatus = .ok, requestID: String, warnings: [IdentityWarning] = [],
        metadata extra: JSONObject = [:]
    ) -> HTTPResponse {
        if warnings.isEmpty && extra.isEmpty {
            // The common case, written straight out (the same bytes the tree below serialises to):
            // no envelope and metadata objects built per request, only `data` goes through a tree.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(256)
            bytes.append(contentsOf: #"{"success":true,"data":"#.utf8)
            data.serialize(into: &bytes)
            bytes.append(contentsOf: #","error":null,"metadata":{"requestId":"#.utf8)
            JSONValue.string(requestID).serialize(into: &bytes)
            bytes.append(contentsOf: "}}".utf8)
            return response(status, bytes, requestID: requestID)
        }
        var metadata: JSONObject = ["requestId": .string(requestID)]
        for (key, value) in extra { metadata[key] = value }
        if !warnings.isEmpty { metadata["warnings"] = render(warnings) }
        let body: JSONValue = .object([
            "success": true, "data": data, "error": nil, "metadata": .object(metadata),
        ])
        return response(status, body, requestID: requestID)
    }

    package static func failure(_ error: APIError, requestID: String) -> HTTPResponse {
        var errorObject: JSONObject = ["code": .string(error.code), "message": .string(error.message)]
        errorObject["details"] = error.details.map(JSONValue.object) ?? .object([:])
        let body: JSONValue = .object([
            "success": false, "data": nil, "error": .object(errorObject),
            "metadata": .object(["requestId": .string(requestID)]),
        ])
        var response = response(error.status, body, requestID: requestID)
        for (name, value) in error.headers { response.headers.add(name: name, value: value) }
        return response
    }

    private static func render(_ warnings: [IdentityWarning]) -> JSONValue {
        .array(warnings.map { .object(["code": .string($0.code.rawValue), "message": .string($0.message)]) })
    }

    private static func response(_ status: HTTPStatus, _ body: JSONValue, requestID: String) -> HTTPResponse {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        body.serialize(into: &bytes)
        return response(status, bytes, requestID: requestID)
    }

    private static func response(_ status: HTTPStatus, _ bytes: [UInt8], requestID: String) -> HTTPResponse {
        var headers = jsonHeaders
        headers.add(name: "X-Request-Id", value: requestID)
        return HTTPResponse(status: status, headers: headers, body: bytes)
    }
}
