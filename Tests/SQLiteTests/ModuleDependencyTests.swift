import Foundation
import Testing

/// STYLE.md: no Foundation in the server's modules. SQLite used it only for `Thread`.
@Suite struct ModuleDependencyTests {
    @Test func theSQLiteModuleDoesNotImportFoundation() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/SQLite").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 5, "found the module's sources at \(sources.path)")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }
            #expect(!imports.contains { $0.contains("Foundation") }, "\(file): \(imports)")
        }
    }
}
