import Foundation
import SQLite

/// A fresh directory under the system temporary directory, removed on deinit.
final class TemporaryDirectory {
    let path: String

    init() {
        let template = NSTemporaryDirectory() + "buzzkit-sqlite-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { fatalError("mkdtemp failed: \(errno)") }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Where a test database lives: the same test body runs on both.
enum Location: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory, file

    var description: String { rawValue }

    /// Opens a database here; `directory` keeps the file alive for the test.
    func open(_ directory: TemporaryDirectory) throws -> Database {
        switch self {
        case .memory: try Database(path: ":memory:")
        case .file: try Database(path: directory.file("test.sqlite"))
        }
    }
}

struct TestError: Error, Equatable {
    var tag: String
}
