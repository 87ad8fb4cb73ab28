/// The fields of a value type kept behind one reference, so that a copy of the value is one
/// retain however many strings and arrays the fields hold; the first change to a copy that
/// shares its box gives it a box of its own (copy on write), so the value semantics stay.
final class CopyOnWriteBox<Fields: Sendable>: @unchecked Sendable {
    // @unchecked: `fields` is only written through `update`, on a box no other value holds.
    var fields: Fields

    init(_ fields: Fields) { self.fields = fields }

    /// Changes the fields of `box`, first copying them into a new box if another value shares it.
    static func update(_ box: inout CopyOnWriteBox, _ change: (inout Fields) -> Void) {
        if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.fields) }
        change(&box.fields)
    }
}
