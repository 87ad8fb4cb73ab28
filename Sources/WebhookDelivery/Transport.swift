/// Sends one webhook POST and reports the response status. The worker depends on this alone,
/// so tests use a fake; `buzzkit serve` plugs in `WebhookClient.DeliveryClient` (http and https).
package protocol DeliveryTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the status code.
    /// - Throws: when no status arrived within `timeout` (refused, reset, timed out, bad answer).
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int
}

/// A failed send: what went wrong, for the delivery's `error` field (never a secret).
package struct TransportError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
