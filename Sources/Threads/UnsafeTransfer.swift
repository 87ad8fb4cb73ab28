/// Moves a non-`Sendable` value to another thread that becomes its only user.
///
/// `@unchecked Sendable` is sound only when the sender stops using the value after handing it
/// over (or, in the connection pools, when a lock guarantees one borrower at a time); each use
/// site says which.
package struct UnsafeTransfer<Value>: @unchecked Sendable {
    /// The value moved.
    package let value: Value

    /// Wraps `value` for the hand-off.
    package init(value: Value) { self.value = value }
}
