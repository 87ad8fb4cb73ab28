import COpenSSL

/// SHA-256 digests computed by libcrypto.
///
/// ```swift
/// let digest = Digest.sha256("abc")   // 32 bytes
/// ```
package enum Digest {
    /// Length in bytes of a SHA-256 digest.
    package static let sha256ByteCount = 32

    /// SHA-256 of `bytes`.
    package static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        // Contiguous inputs (arrays, slices, UTF-8 views of native strings) are hashed in place.
        if let digest = bytes.withContiguousStorageIfAvailable({ sha256(buffer: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { sha256(buffer: $0) }
    }

    /// SHA-256 of the UTF-8 bytes of `string`.
    package static func sha256(_ string: String) -> [UInt8] {
        sha256(string.utf8)
    }

    /// SHA-256 of a raw buffer; the single place that calls `EVP_Digest`.
    private static func sha256(buffer: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: sha256ByteCount) { output, initialized in
            var length: UInt32 = 0
            // An empty Swift buffer may have a nil base address; OpenSSL wants a pointer even for 0 bytes.
            let ok = withNonNullBase(buffer) { base, count in
                EVP_Digest(base, count, output.baseAddress, &length, EVP_sha256(), nil)
            }
            // Failure here means libcrypto is broken (out of memory); there is no sane fallback.
            precondition(ok == 1 && length == UInt32(sha256ByteCount), "EVP_Digest(SHA-256) failed")
            initialized = Int(length)
        }
    }
}

/// Calls `body` with a base pointer that is never nil, so C APIs that reject NULL accept empty input.
func withNonNullBase<R>(
    _ buffer: UnsafeRawBufferPointer, _ body: (UnsafeRawPointer, Int) -> R
) -> R {
    if let base = buffer.baseAddress {
        return body(base, buffer.count)
    }
    var dummy: UInt8 = 0
    return withUnsafePointer(to: &dummy) { body(UnsafeRawPointer($0), 0) }
}
