import HTTP1
import HTTPServer

/// The admin page of API.md §15: static files from the repository's `dashboard/` folder,
/// compiled in at build time. The page holds no data; it calls `/v1` with the operator's key.
enum DashboardController {
    /// One embedded file, ready to send.
    struct Asset: Sendable {
        var contentType: String
        var body: [UInt8]
    }

    /// Every header a dashboard answer carries. The policy allows only this origin's files, so
    /// nothing inline runs and nothing is fetched from another host; no page may frame it.
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        // The key lives in the page's sessionStorage; a shared cache has no business with it.
        ("Cache-Control", "no-cache"),
    ]

    /// The embedded files by name (`index.html`, `app.js`, …).
    static let assets: [String: Asset] = {
        var assets: [String: Asset] = [:]
        for file in embeddedDashboardFiles {
            guard let type = contentType(of: file.fileName) else { continue }
            assets[file.fileName] = Asset(contentType: type, body: Array(file.contents.utf8))
        }
        return assets
    }()

    static func contentType(of fileName: String) -> String? {
        switch fileName.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        default: nil
        }
    }

    static var routes: [Route] {
        [
            Route(method: .GET, path: "/dashboard", access: .open, operationID: "getDashboard") { _ in
                try serve("index.html")
            },
            Route(method: .GET, path: "/dashboard/:asset", access: .open, operationID: "getDashboardAsset") {
                context in
                try serve(try context.parameter("asset"))
            },
        ]
    }

    private static func serve(_ name: String) throws(APIError) -> Outcome {
        guard let asset = assets[name] else {
            throw APIError(APIError.Code.notFound, message: "The dashboard has no file named '\(name)'.")
        }
        var headers: HTTPHeaders = ["Content-Type": asset.contentType]
        for (name, value) in securityHeaders { headers.add(name: name, value: value) }
        return .reply(Reply(raw: HTTPResponse(status: .ok, headers: headers, body: asset.body)))
    }
}
