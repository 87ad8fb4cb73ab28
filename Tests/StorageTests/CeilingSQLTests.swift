import Foundation
import TestSupport
import Testing

/// `bench/sqlite_ceiling.c` is what SQLite alone does with the server's SQL: the identify, events
/// and uncached GET ratios of issue 14 are measured against it. Its statements are copies, and
/// copies drift: it once read two rows a GET that the server takes from a cache, and missed two
/// statements of a rename (4e45db2). This reads every SQL text the ceiling defines and finds it,
/// word for word, in the server's sources, so a statement changed on one side fails here.
/// Statements the ceiling lacks are the other kind of drift; `IdentifyWriteCountTests` counts
/// the writes, and the ceiling's comments name the domain code each request follows.
@Suite struct CeilingSQLTests {
    /// The SQL texts in the C file: each `#define SQL_…` macro's string pieces joined, each
    /// `static const char SQL_…[]`, and each element of a `SQL_…[] = { … }` array.
    static func statements(inC source: String) -> [(name: String, sql: String)] {
        var found: [(String, String)] = []
        var lines = source.components(separatedBy: "\n")[...]
        while let line = lines.popFirst() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#define SQL_") {
                var logical = line
                var last = line
                while last.hasSuffix("\\"), let next = lines.popFirst() {
                    logical += "\n" + next
                    last = next
                }
                let name = String(trimmed.dropFirst("#define ".count).prefix { $0 != " " && $0 != "\\" })
                let pieces = literals(in: logical)
                if !pieces.isEmpty { found.append((name, pieces.joined())) }
            } else if trimmed.hasPrefix("static const char"), trimmed.contains(" SQL_") {
                let name = String(
                    trimmed.split(separator: " ").first { $0.hasPrefix("SQL_") }?.prefix { $0 != "[" } ?? "")
                if trimmed.hasSuffix("{") {
                    var index = 0
                    while let element = lines.popFirst(), !element.contains("};") {
                        for piece in literals(in: element) {
                            found.append(("\(name)[\(index)]", piece))
                            index += 1
                        }
                    }
                } else {
                    found.append((name, literals(in: line).joined()))
                }
            }
        }
        return found
    }

    /// The C string literals on a line, unescaped (`\n`, `\"`, `\\`).
    static func literals(in text: String) -> [String] {
        var pieces: [String] = []
        var current: String?
        var escaped = false
        for character in text {
            guard var piece = current else {
                if character == "\"" { current = "" }
                continue
            }
            if escaped {
                piece.append(character == "n" ? "\n" : character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                pieces.append(piece)
                current = nil
                continue
            } else {
                piece.append(character)
            }
            current = piece
        }
        return pieces
    }

    /// Whitespace runs (and the `\n` escapes of one-line Swift literals) as one space.
    static func normalized(_ text: String) -> String {
        text.replacingOccurrences(of: "\\n", with: " ").split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// `\(name)` and `\(Self.name)` in `text` replaced by the value of each `static let name = "…"`
    /// or `"""…"""` constant in it: the server builds some statements from shared column lists.
    static func expandingConstants(_ text: String) throws -> String {
        let constant = try NSRegularExpression(
            pattern: #"static let (\w+) = (?:"""\n(.*?)\n\s*"""|"([^"\\\n]*)")"#, options: [.dotMatchesLineSeparators])
        var expanded = text
        let whole = NSRange(text.startIndex..., in: text)
        for match in constant.matches(in: text, range: whole) {
            guard let name = Range(match.range(at: 1), in: text).map({ String(text[$0]) }) else { continue }
            let valueRange = match.range(at: 2).location != NSNotFound ? match.range(at: 2) : match.range(at: 3)
            guard let value = Range(valueRange, in: text).map({ String(text[$0]) }) else { continue }
            expanded = expanded.replacingOccurrences(of: "\\(\(name))", with: value)
                .replacingOccurrences(of: "\\(Self.\(name))", with: value)
        }
        return expanded
    }

    private func serverSources() throws -> String {
        let texts = try swiftSources(ofModules: ["Storage", "SQLite"]).map { try Self.expandingConstants($0.text) }
        return Self.normalized(texts.joined(separator: "\n"))
    }

    @Test func theExtractorReadsPiecesEscapesAndArrays() {
        let source = #"""
            #define SQL_A                 \
                "SELECT a\n"              \
                "FROM t WHERE b = \"x\""
            #define NOT_SQL 16
            static const char SQL_B[] = "BEGIN";
            static const char *const SQL_C[] = {
                "DELETE FROM u",
                "UPDATE v SET w = 1",
            };
            """#
        let found = Self.statements(inC: source)
        #expect(found.map(\.name) == ["SQL_A", "SQL_B", "SQL_C[0]", "SQL_C[1]"])
        #expect(
            found.map(\.sql) == ["SELECT a\nFROM t WHERE b = \"x\"", "BEGIN", "DELETE FROM u", "UPDATE v SET w = 1"])
    }

    @Test func constantsAreExpandedWhereTheServerInterpolatesThem() throws {
        let source = #"""
            private static let columns = """
                a, b
                """
            private static let table = "t"
            static let byKey = "SELECT \(columns) FROM \(Self.table) WHERE key = ?"
            """#
        let expanded = try Self.normalized(Self.expandingConstants(source))
        #expect(expanded.contains("SELECT a, b FROM t WHERE key = ?"))
    }

    @Test func everyStatementOfTheCeilingIsTheServers() throws {
        let ceiling = try String(
            contentsOf: repositoryRoot.appendingPathComponent("bench/sqlite_ceiling.c"), encoding: .utf8)
        let statements = Self.statements(inC: ceiling)
        // The rename, the events batch, the GET, the absorb and their transactions: about thirty.
        #expect(statements.count >= 25, "found only \(statements.map(\.name))")
        let server = try serverSources()
        // `Savepoint("job")` builds these from the name; `Database+Transactions.swift` holds the
        // pattern, not the text.
        let builtFromAName: Set = [#"SAVEPOINT "job""#, #"RELEASE SAVEPOINT "job""#]
        for (name, sql) in statements where !builtFromAName.contains(sql) {
            let found = server.contains(Self.normalized(sql))
            #expect(found, "\(name) is not the server's SQL: \(sql)")
        }
    }
}
