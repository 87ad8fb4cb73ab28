import COpenSSL

/// Keyed message authentication (RFC 2104) computed by libcrypto.
///
/// ```swift
/// let mac = HMAC.sha256(key: Array("secret".utf8), message: Array("user_42".utf8))
/// ```
package enum HMAC {
    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    /// - Parameters:
    ///   - key: any length; keys longer than 64 bytes are hashed first, as RFC 2104 says.
    ///   - message: the bytes to authenticate.
    package static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Digest.sha256ByteCount) { output, initialized in
            var length: UInt32 = 0
            let result = key.withUnsafeBytes { keyBuffer in
                message.withUnsafeBytes { messageBuffer in
                    // Non-null pointers even for empty input: OpenSSL 3 treats a NULL key as "no key".
                    withNonNullBase(keyBuffer) { keyBase, keyCount in
                        withNonNullBase(messageBuffer) { messageBase, messageCount in
                            COpenSSL.HMAC(
                                EVP_sha256(), keyBase, Int32(keyCount),
                                messageBase.assumingMemoryBound(to: UInt8.self), messageCount,
                                output.baseAddress, &length)
                        }
                    }
                }
            }
            // Failure means libcrypto itself is broken; continuing would produce a forgeable MAC.
            precondition(result != nil && length == UInt32(Digest.sha256ByteCount), "HMAC-SHA256 failed")
            initialized = Int(length)
        }
    }
}
