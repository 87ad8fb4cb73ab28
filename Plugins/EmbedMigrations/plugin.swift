import Foundation
import PackagePlugin

/// Compiles the top-level `migrations/*.sql` into the target as Swift string literals,
/// so the `buzzkit` binary carries its schema wherever it runs from.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let migrations = context.package.directoryURL.appendingPathComponent("migrations")
        let files = (try? FileManager.default.contentsOfDirectory(
            at: migrations, includingPropertiesForKeys: nil))?
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent } ?? []
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "MigrationEmbedder").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
