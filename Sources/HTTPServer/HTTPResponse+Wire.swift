import HTTP1

extension HTTPResponse {
    /// This response on the wire with the framing the connection decided: gzip applied when
    /// the framing asks for it (identity if zlib refuses), then HTTP1's one serializer.
    func serialize(framing: HTTPResponseFraming, date: String, into output: inout [UInt8]) {
        var framing = framing
        var compressed: [UInt8]?
        if framing.gzip {
            compressed = Compressor.gzip(body)
            framing.gzip = compressed != nil
        }
        serializeResponse(
            status: status, headers: headers, body: compressed ?? body, framing: framing, date: date, into: &output)
    }
}
