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
        var commands: [Command] = [
            .buildCommand(
                displayName: "Embedding \(files.count) file(s) into \(target.name)",
                executable: try context.tool(named: "FileEmbedder").url,
                arguments: [output.path, variable] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
        // The dashboard's page, script and styles (API.md §15) go into `API` too, as a second list.
        if target.name == "API" {
            let folder = root.appendingPathComponent("dashboard")
            let page = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
                .filter { ["html", "css", "js", "svg"].contains($0.pathExtension) }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
            // Fail the build rather than ship a binary whose /dashboard is a 404 (a build context,
            // such as a Dockerfile's, that left the folder out).
            guard page.contains(where: { $0.lastPathComponent == "index.html" }) else {
                throw PluginError.missing(folder.path + "/index.html")
            }
            let pageOutput = context.pluginWorkDirectoryURL.appendingPathComponent("Embedded_embeddedDashboardFiles.swift")
            commands.append(
                .buildCommand(
                    displayName: "Embedding \(page.count) dashboard file(s) into API",
                    executable: try context.tool(named: "FileEmbedder").url,
                    arguments: [pageOutput.path, "embeddedDashboardFiles"] + page.map(\.path),
                    inputFiles: page,
                    outputFiles: [pageOutput]))
        }
        return commands
    }
}

/// A file the build needs is not in the package.
enum PluginError: Error, CustomStringConvertible {
    case missing(String)
    var description: String {
        switch self {
        case .missing(let path): "EmbedFiles: \(path) is missing"
        }
    }
}
