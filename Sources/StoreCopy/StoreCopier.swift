/// Reads one consistent snapshot of a store, a table at a time in key order.
///
/// Every call between ``begin()`` and ``end()`` sees the same committed state, however long the
/// copy takes and whatever a server writes meanwhile.
package protocol CopySource: AnyObject {
    /// Pins the snapshot (a read transaction); later calls read from it.
    func begin() throws
    /// Whether the schema has `table` (for the plan's optional tables).
    func hasTable(_ table: CopyTable) throws -> Bool
    /// The rows of `table` that the snapshot holds and the plan copies.
    func count(_ table: CopyTable) throws -> Int
    /// Up to `limit` rows in key order whose key is after `after` (from the start when nil).
    func rows(_ table: CopyTable, after: [CopyValue]?, limit: Int) throws -> [[CopyValue]]
    /// Releases the snapshot.
    func end()
}

/// Writes a copy into an empty store, all in one transaction so a failed copy leaves the
/// target as it was.
package protocol CopyTarget: AnyObject {
    /// Names the first kind that already holds rows, or nil when the target is empty.
    /// Reads only: a refused target is left exactly as it was.
    func firstNonEmptyKind(_ tables: [CopyTable]) throws -> String?
    /// Brings the schema up to date and opens the write transaction.
    func begin() throws
    /// Whether the schema has `table`, after ``begin()``.
    func hasTable(_ table: CopyTable) throws -> Bool
    /// Appends rows to `table`.
    func insert(_ table: CopyTable, _ rows: [[CopyValue]]) throws
    /// The rows `table` holds now, inside the transaction.
    func count(_ table: CopyTable) throws -> Int
    /// Finishes what the engine needs after explicit keys (sequences), then commits.
    func commit(_ tables: [CopyTable]) throws
    /// Rolls back; never throws.
    func rollback()
}

/// A copy that could not be made; the target was left unchanged.
package struct StoreCopyError: Error, CustomStringConvertible {
    /// For the operator.
    package var message: String
    /// A copy error.
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// How many rows of one kind were copied, as counted on both sides.
package struct CopyCount: Sendable, Hashable {
    /// "subscribers", "push subscriptions", …
    package var kind: String
    /// Rows in the source snapshot.
    package var source: Int
    /// Rows in the target after the copy.
    package var target: Int
}

/// `buzzkit copy`: one snapshot of a source into an empty target, streamed in batches.
///
/// ```swift
/// let counts = try StoreCopier().copy(from: source, to: target) { print($0) }
/// ```
package struct StoreCopier {
    /// Rows read and written at a time: bounds memory whatever the size of the source.
    package var batchSize = 1000
    /// The tables moved; ``CopyPlan/tables`` by default.
    package var tables = CopyPlan.tables

    /// A copier with the default plan.
    package init() {}

    /// Copies every table of the plan and checks the counts before committing.
    /// - Parameters:
    ///   - source: Read in one snapshot.
    ///   - target: Must hold no rows of any copied table.
    ///   - progress: Called once per kind when it is done.
    /// - Returns: The counts per kind, in plan order.
    /// - Throws: ``StoreCopyError`` for a non-empty target or a count that differs; engine errors
    ///   as they come. The target is unchanged whenever this throws.
    @discardableResult
    package func copy(
        from source: any CopySource, to target: any CopyTarget, progress: (CopyCount) -> Void = { _ in }
    ) throws -> [CopyCount] {
        // Tenants first, so the message names what the operator thinks of as the data.
        let checkOrder = tables.filter { $0.name == "tenants" } + tables.filter { $0.name != "tenants" }
        if let kind = try target.firstNonEmptyKind(checkOrder) {
            throw StoreCopyError("the target already holds \(kind); copy only into an empty database")
        }
        try source.begin()
        defer { source.end() }
        try target.begin()
        do {
            // The server may have written between the first look and the transaction.
            if let kind = try target.firstNonEmptyKind(checkOrder) {
                throw StoreCopyError("the target already holds \(kind); copy only into an empty database")
            }
            var counts: [CopyCount] = []
            for table in tables {
                if table.optional {
                    guard try source.hasTable(table) else { continue }
                    // An empty table the target lacks loses nothing; rows it cannot take refuse the copy.
                    guard try target.hasTable(table) else {
                        guard try source.count(table) == 0 else {
                            throw StoreCopyError(
                                "the source has \(table.kind) and the target's schema does not; upgrade it")
                        }
                        continue
                    }
                }
                let expected = try source.count(table)
                let written = try copyRows(of: table, from: source, to: target)
                let found = try target.count(table)
                guard written == expected, found == expected else {
                    throw StoreCopyError(
                        "\(table.kind): the source snapshot holds \(expected), \(written) were copied and the "
                            + "target holds \(found); nothing was committed")
                }
                let count = CopyCount(kind: table.kind, source: expected, target: found)
                counts.append(count)
                progress(count)
            }
            try target.commit(tables)
            return counts
        } catch {
            target.rollback()
            throw error
        }
    }

    /// Streams one table; returns the rows written.
    private func copyRows(of table: CopyTable, from source: any CopySource, to target: any CopyTarget) throws -> Int {
        let keyIndices = table.keyIndices
        var after: [CopyValue]?
        var written = 0
        while true {
            let batch = try source.rows(table, after: after, limit: batchSize)
            guard let last = batch.last else { break }
            try target.insert(table, batch)
            written += batch.count
            after = keyIndices.map { last[$0] }
            if batch.count < batchSize { break }
        }
        return written
    }
}
