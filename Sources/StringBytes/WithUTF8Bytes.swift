#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The UTF-8 of `string` in place, without the copy (a retain and a release) that
/// `String.withUTF8` needs for being mutating; a string that is not contiguous UTF-8
/// (bridged) is copied first. Shared by the HTTP parser, the JSON writer and the id checks,
/// which all read request strings byte by byte on every request.
@inlinable @inline(__always)
package func withUTF8Bytes<R>(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let result = try string.utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = string
    return try copy.withUTF8(body)
}

/// Whether two strings have the same UTF-8 bytes: what `==` answers for the ASCII strings it is
/// used on (keys, ids), without the runtime's comparison, which for two equal strings in
/// different buffers took ~120 instructions (callgrind): a length check and `memcmp`.
@inlinable
package func sameUTF8(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    return withUTF8Bytes(a) { x in
        withUTF8Bytes(b) { y in x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
    }
}
