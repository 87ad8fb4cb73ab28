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
