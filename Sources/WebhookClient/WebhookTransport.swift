/// What the delivery worker needs from an HTTP client: one signed POST, and the status it got.
///
/// ``DeliveryClient`` is the real one; tests of the worker can plug in a fake.
///
/// ```swift
/// let transport: any WebhookTransport = try DeliveryClient()
/// let status = try transport.post(
///     url: "https://hooks.example.com/buzzkit",
///     headers: [("content-type", "application/json"), ("webhook-id", id), …],
///     body: body, timeout: .seconds(15))
/// ```
package protocol WebhookTransport: Sendable {
    /// Sends `POST url` with `headers` and `body`, and returns the response's status code.
    ///
    /// Blocks the calling thread until the status line is read or `timeout` (connect, TLS
    /// handshake, sending and waiting, all together) runs out; run it off the request path.
    /// - Throws: ``WebhookClientError`` for anything that is not a status line in time.
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int
}

/// Why a delivery attempt got no status code. `description` is fit for the deliveries list
/// (`error`): it names the host and the failing step, never a header or the body.
package struct WebhookClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The step that failed, for metrics and tests.
    package enum Kind: String, Hashable, Sendable {
        /// Not an `http://` or `https://` URL with a host (or it has userinfo, or a bad port).
        case invalidURL
        /// A header name or value that would break the request's framing.
        case invalidHeader
        /// The host name did not resolve.
        case resolveFailed
        /// Every resolved address was refused by ``DeliveryClient/Configuration/allowsAddress``.
        case addressRefused
        /// No address accepted the connection.
        case connectFailed
        /// The connect timeout or the total timeout ran out.
        case timedOut
        /// The TLS handshake or a TLS read or write failed.
        case tlsFailed
        /// The server's certificate did not verify (untrusted, expired, wrong host name).
        case certificateRejected
        /// The answer did not start with an HTTP/1.x status line.
        case invalidResponse
        /// The server closed the connection before a whole status line arrived.
        case connectionClosed
        /// A socket call failed after the connection was made.
        case ioFailed
    }

    /// The step that failed.
    package var kind: Kind
    /// What happened, in words.
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { "\(kind.rawValue): \(message)" }
}
