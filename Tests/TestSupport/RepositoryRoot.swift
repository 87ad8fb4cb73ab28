import Foundation

/// The repository's root folder, for tests that read its files (README, migrations, sources,
/// scripts, the benchmark's C program): three folders up from this file,
/// `Tests/TestSupport/RepositoryRoot.swift`.
package let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
