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
        var output: [UInt8] = []
        output.reserveCapacity(length)
        var batch: [UInt8] = []
        var next = 0
        appendSymbols(length, of: alphabet, to: &output) {
            if next == batch.count {
                // A little more than the whole token needs, so one batch usually suffices.
                batch = source(length * 5 / 4 + 8)
                next = 0
            }
            next += 1
            return batch[next - 1]
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `count` symbols of `alphabet`, each uniform, drawn from the CSPRNG bytes `nextByte`
    /// returns one at a time: the sampling every token uses, for callers that keep their own
    /// buffer of random bytes and build ids in place.
    package static func appendSymbols(
        _ count: Int, of alphabet: [UInt8], to output: inout [UInt8], nextByte: () -> UInt8
    ) {
        precondition((2...256).contains(alphabet.count), "alphabet must hold 2...256 symbols")
        precondition(alphabet.allSatisfy { $0 < 0x80 }, "alphabet must be ASCII")
        let n = alphabet.count
        // Rejection sampling: bytes at or above the largest multiple of n would favour the
        // first symbols (256 % 62 = 8), so they are dropped instead of reduced modulo n.
        let limit = (256 / n) * n
        var appended = 0
        while appended < count {
            let byte = Int(nextByte())
            guard byte < limit else { continue }
            output.append(alphabet[byte % n])
            appended += 1
        }
    }
}
