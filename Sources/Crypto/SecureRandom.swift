import COpenSSL

/// Cryptographically secure random bytes and tokens from libcrypto's CSPRNG.
///
/// ```swift
/// let key = SecureRandom.bytes(32)
/// let id = SecureRandom.token(length: 24)   // base62
/// ```
package enum SecureRandom {
    /// The 62 ASCII letters and digits: URL-safe and copy-paste friendly.
    package static let base62: [UInt8] = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// `count` random bytes from `RAND_bytes`.
    package static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 {
                // Secrets made from a failed CSPRNG would be guessable; stopping is the only safe answer.
                guard RAND_bytes(buffer.baseAddress, Int32(count)) == 1 else {
                    fatalError("RAND_bytes failed: the system CSPRNG is unavailable")
                }
            }
            initialized = count
        }
    }

    /// A random string of `length` characters drawn uniformly from `alphabet`.
    /// - Parameters:
    ///   - length: number of characters.
    ///   - alphabet: 2...256 distinct ASCII bytes; defaults to ``base62``.
    package static func token(length: Int, alphabet: [UInt8] = base62) -> String {
        token(length: length, alphabet: alphabet, from: bytes)
    }

    /// `token(length:alphabet:)` with its random bytes from `source` (asked for `n`, it returns
    /// `n` CSPRNG bytes): for a caller that fetches them in batches.
    package static func token(length: Int, alphabet: [UInt8] = base62, from source: (Int) -> [UInt8]) -> String {
        precondition(length >= 0, "negative token length")
        precondition((2...256).contains(alphabet.count), "alphabet must hold 2...256 symbols")
        precondition(alphabet.allSatisfy { $0 < 0x80 }, "alphabet must be ASCII")
        let n = alphabet.count
        // Rejection sampling: bytes at or above the largest multiple of n would favour the
        // first symbols (256 % 62 = 8), so they are dropped instead of reduced modulo n.
        let limit = (256 / n) * n
        var output: [UInt8] = []
        output.reserveCapacity(length)
        while output.count < length {
            // Ask for a little more than needed so one batch usually suffices.
            let batch = source((length - output.count) * 5 / 4 + 8)
            for byte in batch where Int(byte) < limit {
                output.append(alphabet[Int(byte) % n])
                if output.count == length { break }
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
