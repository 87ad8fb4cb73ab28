// MARK: - Migration

/// One numbered SQL file, e.g. `0001_initial.sql`, for either engine. Never edited once shipped:
/// ``pendingMigrations(_:applied:)`` refuses a ledger where an applied migration's checksum differs.
package struct Migration: Sendable, Hashable {
    /// The number before the first `_` (`1` for `0001_initial.sql`); the order of application.
    package var version: Int
    /// The text between the number and `.sql` (`initial`).
    package var name: String
    /// The SQL script, run as is in one transaction.
    package var sql: String
    /// 64-bit FNV-1a of the exact UTF-8 bytes of ``sql``, as 16 lowercase hex digits.
    ///
    /// Not cryptographic (none is needed: it detects accidental edits, not attacks) and
    /// computed without a crypto library. Any byte change, including line endings, changes it.
    package var checksum: String

    /// `0001_initial`: the file name without `.sql`, as used in messages.
    package var identifier: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Parses a migration file name and computes the checksum.
    ///
    /// ```swift
    /// let migration = try Migration(fileName: "0001_initial.sql", sql: text)  // version 1, "initial"
    /// ```
    /// - Parameters:
    ///   - fileName: `NNNN_name.sql`: digits, `_`, a name of letters, digits, `_` or `-`; a
    ///     leading directory is ignored.
    ///   - sql: The file's content.
    /// - Throws: ``MigrationError`` when the name does not follow the pattern or the version is 0.
    package init(fileName: String, sql: String) throws {
        let baseName =
            fileName.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? fileName
        guard baseName.hasSuffix(".sql") else {
            throw MigrationError(.invalidFileName, "migration file name \"\(fileName)\" does not end in .sql")
        }
        let stem = baseName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else {
            throw MigrationError(.invalidFileName, "migration file name \"\(fileName)\" is not NNNN_name.sql")
        }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        let nameIsValid =
            !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                (("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
                    || $0 == "_" || $0 == "-")
            }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let version = Int(digits), version > 0, nameIsValid
        else {
            throw MigrationError(
                .invalidFileName,
                "migration file name \"\(fileName)\" is not NNNN_name.sql (a version > 0, then a name of letters, digits, _ or -)"
            )
        }
        self.init(version: version, name: String(name), sql: sql)
    }

    /// Creates a migration from its parts.
    /// - Parameters:
    ///   - version: A positive number.
    ///   - name: A short name.
    ///   - sql: The SQL script.
    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = Migration.checksum(of: sql)
    }

    /// 64-bit FNV-1a (<http://www.isthe.com/chongo/tech/comp/fnv/>) of the UTF-8 bytes, hex.
    package static func checksum(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

// MARK: - Errors

/// Why migrating failed; `description` says which migration and what to do.
package struct MigrationError: Error, CustomStringConvertible {
    /// A stable category, for tests and callers that branch on it.
    package struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidFileName, duplicateVersion, edited, unknownVersion, outOfOrder, failed, foreignKeyViolation
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A file name that is not `NNNN_name.sql`.
        package static let invalidFileName = Kind(.invalidFileName)
        /// Two migrations share a version number.
        package static let duplicateVersion = Kind(.duplicateVersion)
        /// An applied migration's checksum or name differs from this binary's.
        package static let edited = Kind(.edited)
        /// The database has versions this binary does not know: it is newer than the binary.
        package static let unknownVersion = Kind(.unknownVersion)
        /// A pending migration is numbered below one already applied.
        package static let outOfOrder = Kind(.outOfOrder)
        /// The migration's SQL failed; see ``MigrationError/underlying``.
        package static let failed = Kind(.failed)
        /// The migration left rows violating foreign keys (SQLite's `PRAGMA foreign_key_check`).
        package static let foreignKeyViolation = Kind(.foreignKeyViolation)

        /// The category name.
        package var description: String { value.rawValue }
    }

    /// The category.
    package var kind: Kind
    /// The human-readable explanation, naming the migration file.
    package var message: String
    /// The engine's error behind a `.failed` migration.
    package var underlying: (any Error)?

    package init(_ kind: Kind, _ message: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// The message, followed by the underlying error if any.
    package var description: String {
        guard let underlying else { return message }
        return "\(message): \(underlying)"
    }
}
