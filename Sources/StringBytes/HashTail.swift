extension Hasher {
    /// Feeds the last eight UTF-8 bytes of `string` (all of it when shorter). For a table whose
    /// stored strings are of our own making with a random tail (API keys, tenant ids) it spreads
    /// them as well as the whole string would, for one word of hashing. Not for a table that
    /// stores strings a client chooses: their tails can be made to collide.
    @inlinable
    package mutating func combineTail(of string: String) {
        withUTF8Bytes(string) { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            if raw.count >= 8 {
                combine(raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
            } else {
                combine(bytes: raw)
            }
        }
    }
}
