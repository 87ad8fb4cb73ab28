import COpenSSL

/// Whether `a` and `b` hold the same bytes, in time independent of where they differ.
///
/// Lengths are public (a MAC's length is fixed), so a length mismatch returns early;
/// the contents are compared with `CRYPTO_memcmp` so an attacker cannot learn a prefix.
package func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { aBuffer in
        b.withUnsafeBytes { bBuffer in
            CRYPTO_memcmp(aBuffer.baseAddress, bBuffer.baseAddress, a.count) == 0
        }
    }
}
