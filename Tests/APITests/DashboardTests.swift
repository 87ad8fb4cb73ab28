import Foundation
import TestSupport
import Testing

/// `GET /dashboard` and its files (API.md §15): served with no key, with the security headers,
/// and byte for byte the files of the repository's `dashboard/` folder, so an edit to one of them
/// is what the next build serves.
@Suite struct DashboardTests {
    static let folder = repositoryRoot.appendingPathComponent("dashboard")

    /// The files of `dashboard/`, by name.
    static func repositoryFiles() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where !name.hasPrefix(".") {
            files[name] = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
        }
        return files
    }

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml",
    ]

    func expectSecurityHeaders(_ response: HTTPClient.Response, _ path: String) {
        #expect(
            response.header("Content-Security-Policy") == "default-src 'self'; frame-ancestors 'none'",
            "\(path): \(response.headers)")
        #expect(response.header("X-Content-Type-Options") == "nosniff", "\(path)")
        #expect(response.header("Referrer-Policy") == "no-referrer", "\(path)")
    }

    @Test func pageNeedsNoKeyAndIsTheRepositorysIndex() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let files = try Self.repositoryFiles()
        let index = try #require(files["index.html"], "dashboard/index.html is missing")
        let response = app.send("GET", "/dashboard", body: [])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Type") == "text/html; charset=utf-8")
        expectSecurityHeaders(response, "/dashboard")
        let same = response.body == index
        #expect(same, "/dashboard (\(response.body.count) bytes) is not dashboard/index.html (\(index.count) bytes)")
    }

    @Test func everyFileIsServedAsItIsInTheRepository() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let files = try Self.repositoryFiles()
        #expect(files.count >= 3, "expected at least index.html, app.js and style.css: \(files.keys.sorted())")
        for (name, bytes) in files {
            let type = try #require(
                Self.contentTypes[String(name.split(separator: ".").last ?? "")], "\(name): no content type known")
            let path = "/dashboard/\(name)"
            // A key of any kind is not needed, and a wrong one does not matter.
            let response = app.send("GET", path, body: [], headers: ["Authorization": "Bearer nonsense"])
            #expect(response.status == 200, "\(path): \(response.text)")
            #expect(response.header("Content-Type") == type, "\(path)")
            expectSecurityHeaders(response, path)
            // Compared as a Bool so a failure names sizes and the first difference, not every byte.
            let same = response.body == bytes
            let common = min(response.body.count, bytes.count)
            let firstDifference = (0..<common).first { response.body[$0] != bytes[$0] } ?? common
            #expect(
                same,
                "\(path) (\(response.body.count) bytes) differs from dashboard/\(name) (\(bytes.count) bytes) from byte \(firstDifference) on: rebuild, or the embedding is lossy"
            )
        }
    }

    @Test func unknownFilesAreNotFound() throws {
        let app = try InProcessApp()
        defer { app.close() }
        for path in ["/dashboard/nope.js", "/dashboard/..%2fopenapi.json", "/dashboard/index"] {
            let response = app.send("GET", path, body: [])
            expectError(response, 404, "not_found")
        }
    }

    /// The policy forbids inline script and style; the page must not lean on either, nor name
    /// another host, or it breaks in the browser rather than in a test.
    @Test func pageUsesNoInlineCodeAndNoOtherHost() throws {
        let files = try Self.repositoryFiles()
        let html = String(decoding: try #require(files["index.html"]), as: UTF8.self)
        let inlineScript = try Regex(#"<script(?![^>]*\bsrc=)[^>]*>"#)
        #expect(html.firstMatch(of: inlineScript) == nil, "an inline <script> in index.html")
        #expect(html.firstMatch(of: try Regex(#"<style\b"#)) == nil, "an inline <style> in index.html")
        #expect(
            html.firstMatch(of: try Regex(#"\s(on[a-z]+|style)\s*="#)) == nil, "an inline handler or style attribute")
        #expect(
            html.firstMatch(of: try Regex(#"(src|href)\s*=\s*["']?(https?:)?//"#)) == nil,
            "index.html loads something from another host")
        let css = String(decoding: try #require(files["style.css"]), as: UTF8.self)
        #expect(
            css.firstMatch(of: try Regex(#"url\(\s*["']?(https?:)?//|@import"#)) == nil,
            "style.css loads something from another host")
        let script = String(decoding: try #require(files["app.js"]), as: UTF8.self)
        #expect(!script.contains("innerHTML"), "app.js must insert text, never HTML")
        #expect(!script.contains("localStorage"), "the key stays in sessionStorage")
    }
}
