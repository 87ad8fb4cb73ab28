import Crypto

/// A `whsec_` secret that is not `whsec_` followed by canonical base64 of at least 24 bytes.
package struct WebhookSecretError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong with it; never the secret itself, which must not reach a log.
    package var reason: String

    package var description: String { "invalid webhook secret: \(reason)" }
}

/// Standard Webhooks signing (API.md §14): `webhook-signature: v1,<base64 HMAC-SHA256>` over
/// `"{id}.{timestamp}.{body}"`, keyed with the base64-decoded part of a `whsec_` secret.
///
/// ```swift
/// let secret = WebhookSignature.generateSecret()              // "whsec_…", shown once
/// let header = try WebhookSignature.sign(secret: secret, id: "evt_1", timestamp: 1_700_000_000, body: body)
/// let ok = try WebhookSignature.verify(secret: secret, id: "evt_1", timestamp: 1_700_000_000,
///                                      body: body, signatureHeader: header)
/// ```
package enum WebhookSignature {
    /// The prefix Standard Webhooks gives secrets, so they are recognisable in config and scanners.
    package static let secretPrefix = "whsec_"
    /// Random bytes in a new secret (API.md §14: 32).
    package static let secretByteCount = 32
    /// The spec allows keys of 24 to 64 bytes; we accept any of them when verifying.
    private static let acceptedKeyLengths = 24...64

    /// A new secret: `whsec_` + base64 of 32 bytes from the CSPRNG.
    package static func generateSecret() -> String {
        secretPrefix + Base64.encode(SecureRandom.bytes(secretByteCount))
    }

    /// The HMAC key inside `secret`.
    /// - Throws: ``WebhookSecretError`` if it lacks the prefix or is not canonical base64 of 24 to 64 bytes.
    package static func key(fromSecret secret: String) throws -> [UInt8] {
        guard secret.hasPrefix(secretPrefix) else { throw WebhookSecretError(reason: "it must start with whsec_") }
        guard let key = Base64.decode(String(secret.dropFirst(secretPrefix.count))) else {
            throw WebhookSecretError(reason: "the part after whsec_ is not base64")
        }
        guard acceptedKeyLengths.contains(key.count) else {
            throw WebhookSecretError(reason: "the key is \(key.count) bytes, not 24 to 64")
        }
        return key
    }

    /// The `webhook-signature` header value for one attempt: `v1,<base64>`.
    /// - Parameters:
    ///   - secret: the endpoint's `whsec_` secret.
    ///   - id: the `webhook-id` (the event id, the same on every attempt).
    ///   - timestamp: the `webhook-timestamp`, Unix seconds of this attempt.
    ///   - body: the exact bytes sent; a receiver must verify the raw body, not re-serialized JSON.
    package static func sign(secret: String, id: String, timestamp: Int64, body: [UInt8]) throws -> String {
        sign(key: try key(fromSecret: secret), id: id, timestamp: timestamp, body: body)
    }

    /// ``sign(secret:id:timestamp:body:)`` with the key already decoded (a worker signing many attempts).
    package static func sign(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> String {
        "v1," + Base64.encode(HMAC.sha256(key: key, message: signedContent(id: id, timestamp: timestamp, body: body)))
    }

    /// Whether any `v1,` entry of `signatureHeader` (space-separated, as the spec allows several
    /// during a secret rotation) is the signature of this message. Other versions are ignored.
    ///
    /// The timestamp is not compared with the clock here: a receiver should also refuse one far
    /// from its own time (the spec suggests 5 minutes) to stop replays.
    package static func verify(
        secret: String, id: String, timestamp: Int64, body: [UInt8], signatureHeader: String
    ) throws -> Bool {
        let expected = HMAC.sha256(
            key: try key(fromSecret: secret), message: signedContent(id: id, timestamp: timestamp, body: body))
        var matched = false
        for entry in signatureHeader.split(separator: " ") where entry.hasPrefix("v1,") {
            guard let given = Base64.decode(String(entry.dropFirst(3))) else { continue }
            // Every entry is compared, in constant time, so timing says nothing about which matched.
            if constantTimeEquals(given, expected) { matched = true }
        }
        return matched
    }

    /// `"{id}.{timestamp}.{body}"` as bytes: the body is appended raw, never decoded as text.
    private static func signedContent(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        var content = Array("\(id).\(timestamp).".utf8)
        content.append(contentsOf: body)
        return content
    }
}
