import Crypto

/// Standard Webhooks signing (API.md §14): `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`
/// with the key being the base64-decoded part of the `whsec_` secret.
package enum WebhookSigning {
    /// Random bytes in a new secret.
    package static let secretByteCount = 32

    /// `whsec_` + standard base64 of 32 random bytes.
    package static func newSecret() -> String {
        "whsec_" + StandardBase64.encode(SecureRandom.bytes(secretByteCount))
    }

    /// The `webhook-signature` header value; nil when the secret is not a `whsec_` secret.
    package static func signature(secret: String, id: String, timestamp: Int64, body: [UInt8]) -> String? {
        guard secret.hasPrefix("whsec_"), let key = StandardBase64.decode(String(secret.dropFirst(6))) else {
            return nil
        }
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return "v1," + StandardBase64.encode(HMAC.sha256(key: key, message: message))
    }
}

/// Standard base64 (RFC 4648 §4, `+/` and `=` padding) over the Crypto module's base64url:
/// only the alphabet and the padding differ.
package enum StandardBase64 {
    package static func encode(_ bytes: [UInt8]) -> String {
        var text = String(Base64URL.encode(bytes).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while text.utf8.count % 4 != 0 { text += "=" }
        return text
    }

    package static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count % 4 == 0, !text.contains("-"), !text.contains("_") else { return nil }
        var trimmed = Substring(text)
        while trimmed.hasSuffix("=") { trimmed = trimmed.dropLast() }
        return Base64URL.decode(String(trimmed.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }))
    }
}
