import Foundation

/// The repository's root folder, for tests that read its files (README, migrations, sources,
/// scripts, the benchmark's C program): three folders up from this file,
/// `Tests/TestSupport/RepositoryRoot.swift`.
package let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Every `.swift` file under `Sources/<module>` for each of `modules`, subfolders included, as
/// its path from `Sources` (`API/Controllers/…`) and its text; for tests that check the sources
/// themselves. A module that does not exist throws rather than being read as empty.
package func swiftSources(ofModules modules: [String]) throws -> [(file: String, text: String)] {
    var found: [(file: String, text: String)] = []
    for module in modules {
        let directory = repositoryRoot.appendingPathComponent("Sources/\(module)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
        for file in files.sorted() where file.hasSuffix(".swift") {
            found.append(
                (module + "/" + file, try String(contentsOfFile: directory.path + "/" + file, encoding: .utf8)))
        }
    }
    return found
}
