import HTTP1
import HTTPServer
import Identity
import JSON
import StringBytes

/// The response envelope every `/v1` answer, `/healthz`, `/readyz` and every error uses (API.md §2).
///
/// Every `requestID` given here must be one `Application.requestID(from:)` returned (minted, or
/// an echoed `X-Request-Id` it checked is printable ASCII): it goes into the answer's
/// `X-Request-Id` as a clean field, which the serializer does not sanitise.
package enum Envelope {
    /// Pre-encoded so every response does not build it again.
    static let jsonContentType = HTTPField(cleanName: "Content-Type", value: "application/json; charset=utf-8")

    package static func success(
        _ data: JSONValue, serializedData: [UInt8]? = nil, status: HTTPStatus = .ok, requestID: String,
        warnings: [IdentityWarning] = [], metadata extra: JSONObject = [:]
    ) -> HTTPResponse {
        assert(isClean(requestID: requestID), "a request id the envelope would have to escape")
        if let serializedData, warnings.isEmpty, extra.isEmpty {
            return response(status, spliced(serializedData, requestID: requestID), requestID: requestID)
        }
        // Written straight out, in the order a tree of the envelope serialises to: no envelope
        // object built per request, and `data` spliced in as bytes when it came serialised.
        var out = JSONWriter(capacity: 256 + (serializedData?.count ?? 0))
        out.literal(#"{"success":true,"data":"#)
        if let serializedData {
            out.append(serializedData)
        } else {
            out.value(data)
        }
        out.literal(#","error":null,"metadata":"#)
        if warnings.isEmpty && extra.isEmpty {
            out.literal(#"{"requestId":""#)
            withUTF8Bytes(requestID) { out.append($0) }  // clean: nothing to escape
            out.literal(#""}"#)
        } else {
            var metadata: JSONObject = ["requestId": .string(requestID)]
            for (key, value) in extra { metadata[key] = value }
            if !warnings.isEmpty { metadata["warnings"] = render(warnings) }
            out.value(.object(metadata))
        }
        out.append(UInt8(ascii: "}"))
        return response(status, out.finish(), requestID: requestID)
    }

    /// Whether `requestID` may be echoed: printable ASCII without `"` or `\`, so it is written
    /// into the body's JSON and the `X-Request-Id` field as it is.
    package static func isClean(requestID: String) -> Bool {
        requestID.utf8.allSatisfy { $0 > 32 && $0 < 127 && $0 != 34 && $0 != 92 }
    }

    /// The envelope of data that came serialised, with no warnings or extra metadata (every
    /// `/healthz`, every GET of a subscriber): its four pieces copied into one array of its
    /// exact size. The writer's way made two arrays (its buffer, then the answer) and wrote the
    /// envelope's text piece by piece: ~500 instructions more a `/healthz` (callgrind).
    private static func spliced(_ data: [UInt8], requestID: String) -> [UInt8] {
        let head: StaticString = #"{"success":true,"data":"#
        let middle: StaticString = #","error":null,"metadata":{"requestId":""#
        let tail: StaticString = #""}}"#
        return withUTF8Bytes(requestID) { id in
            data.withUnsafeBytes { data in
                let count =
                    head.utf8CodeUnitCount + data.count + middle.utf8CodeUnitCount + id.count + tail.utf8CodeUnitCount
                // Made in temporary room and copied once: `Array(unsafeUninitializedCapacity:)`
                // runs unspecialised in the standard library, a metadata lookup of ~360
                // instructions each time, where the copy from a buffer is specialised here.
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
                    var at = UnsafeMutableRawPointer(buffer.baseAddress!)
                    func put(_ bytes: UnsafeRawBufferPointer) {
                        guard let base = bytes.baseAddress else { return }
                        at.copyMemory(from: base, byteCount: bytes.count)
                        at += bytes.count
                    }
                    put(UnsafeRawBufferPointer(start: head.utf8Start, count: head.utf8CodeUnitCount))
                    put(data)
                    put(UnsafeRawBufferPointer(start: middle.utf8Start, count: middle.utf8CodeUnitCount))
                    put(UnsafeRawBufferPointer(id))
                    put(UnsafeRawBufferPointer(start: tail.utf8Start, count: tail.utf8CodeUnitCount))
                    return [UInt8](UnsafeBufferPointer(buffer))
                }
            }
        }
    }

    /// A handler's reply: in the envelope, or as it is when it brought its own response.
    package static func response(for reply: Reply, requestID: String) -> HTTPResponse {
        if var raw = reply.raw {
            raw.headers.add(name: "X-Request-Id", value: requestID)
            return raw
        }
        return success(
            reply.data, serializedData: reply.serializedData, status: reply.status, requestID: requestID,
            warnings: reply.warnings, metadata: reply.metadata)
    }

    package static func failure(_ error: APIError, requestID: String) -> HTTPResponse {
        var errorObject: JSONObject = ["code": .string(error.code), "message": .string(error.message)]
        errorObject["details"] = error.details.map(JSONValue.object) ?? .object([:])
        let body: JSONValue = .object([
            "success": false, "data": nil, "error": .object(errorObject),
            "metadata": .object(["requestId": .string(requestID)]),
        ])
        var response = response(error.status, body, requestID: requestID)
        for field in error.headers { response.headers.add(name: field.name, value: field.value) }
        return response
    }

    private static func render(_ warnings: [IdentityWarning]) -> JSONValue {
        .array(warnings.map { .object(["code": .string($0.code.rawValue), "message": .string($0.message)]) })
    }

    private static func response(_ status: HTTPStatus, _ body: JSONValue, requestID: String) -> HTTPResponse {
        var out = JSONWriter(capacity: 256)
        out.value(body)
        return response(status, out.finish(), requestID: requestID)
    }

    private static func response(_ status: HTTPStatus, _ bytes: [UInt8], requestID: String) -> HTTPResponse {
        // Built whole: one array, not a copy of shared headers grown by one. Both fields are
        // clean: a request id is minted here or echoed only if it is printable ASCII.
        let headers = HTTPHeaders(fields: [jsonContentType, HTTPField(cleanName: "X-Request-Id", value: requestID)])
        return HTTPResponse(status: status, headers: headers, body: bytes)
    }
}
