import Foundation
import TestSupport
import Testing

/// STYLE.md: no Foundation in the server's modules. SQLite used it only for `Thread`; the
/// `Threads` module now gives every server module its threads, locks and clock.
@Suite struct ModuleDependencyTests {
    /// Every module but the SDK (Foundation by design) and the build-time file embedder.
    static let exempt: Set<String> = ["BuzzKit", "FileEmbedder"]

    @Test func noServerModuleImportsFoundation() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path)
            .filter { !Self.exempt.contains($0) }
        #expect(modules.contains("SQLite") && modules.contains("Threads"), "found the sources at \(sources.path)")
        let files = try swiftSources(ofModules: modules)
        for (file, text) in files {
            let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }
            #expect(!imports.contains { $0.contains("Foundation") || $0.contains("Dispatch") }, "\(file)")
        }
        #expect(files.count > 50, "checked \(files.count) files")
    }
}
