import Foundation
import Testing

/// STYLE.md: no Foundation in the server's modules. SQLite used it only for `Thread`; the
/// `Threads` module now gives every server module its threads, locks and clock.
@Suite struct ModuleDependencyTests {
    /// Every module but the SDK (Foundation by design) and the build-time file embedder.
    static let exempt: Set<String> = ["BuzzKit", "FileEmbedder"]

    @Test func noServerModuleImportsFoundation() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources").standardized
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path)
            .filter { !Self.exempt.contains($0) }
        #expect(modules.contains("SQLite") && modules.contains("Threads"), "found the sources at \(sources.path)")
        var checked = 0
        for module in modules {
            let directory = sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }
                #expect(
                    !imports.contains { $0.contains("Foundation") || $0.contains("Dispatch") }, "\(module)/\(file)")
                checked += 1
            }
        }
        #expect(checked > 50, "checked \(checked) files")
    }
}
