import Foundation
import PackagePlugin

/// Compiles files from the repository root into the target as Swift string literals, so the
/// `buzzkit` binary carries them wherever it runs from: `migrations/*.sql` into `Storage`,
/// the hand-written `openapi.json` and the `dashboard/` page into `API`.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL
        switch target.name {
        case "API":
            return [
                try command(context, target, "embeddedOpenAPIDocuments", [root.appendingPathComponent("openapi.json")]),
                try command(
                    context, target, "embeddedDashboardFiles",
                    files(in: root.appendingPathComponent("dashboard"), extensions: ["html", "css", "js", "svg"])),
            ]
        default:
            let migrations = files(in: root.appendingPathComponent("migrations"), extensions: ["sql"])
            return [try command(context, target, "embeddedMigrations", migrations)]
        }
    }

    /// The files of one folder with these extensions, sorted by name.
    private func files(in folder: URL, extensions: Set<String>) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
            .filter { extensions.contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    private func command(_ context: PluginContext, _ target: any Target, _ variable: String, _ files: [URL]) throws
        -> Command
    {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("Embedded_\(variable).swift")
        return .buildCommand(
            displayName: "Embedding \(files.count) file(s) into \(target.name) as \(variable)",
            executable: try context.tool(named: "FileEmbedder").url,
            arguments: [output.path, variable] + files.map(\.path),
            inputFiles: files,
            outputFiles: [output])
    }
}
