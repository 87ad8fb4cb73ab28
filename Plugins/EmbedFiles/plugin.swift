import Foundation
import PackagePlugin

/// Compiles files from the repository root into the target as Swift string literals, so the
/// `buzzkit` binary carries them wherever it runs from: `migrations/*.sql` into `Storage`,
/// the hand-written `openapi.json` into `API`,
/// `migrations/postgres/*.sql` into `PostgresStorage`.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL
        let files: [URL]
        let variable: String
        switch target.name {
        case "API":
            files = [root.appendingPathComponent("openapi.json")]
            variable = "embeddedOpenAPIDocuments"
        case "PostgresStorage":
            let migrations = root.appendingPathComponent("migrations/postgres")
            files =
                ((try? FileManager.default.contentsOfDirectory(at: migrations, includingPropertiesForKeys: nil)) ?? [])
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
            variable = "embeddedPostgresMigrations"
        default:
            let migrations = root.appendingPathComponent("migrations")
            files = ((try? FileManager.default.contentsOfDirectory(at: migrations, includingPropertiesForKeys: nil)) ?? [])
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
            variable = "embeddedMigrations"
        }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("Embedded_\(variable).swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) file(s) into \(target.name)",
                executable: try context.tool(named: "FileEmbedder").url,
                arguments: [output.path, variable] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
