import HTTP1
import HTTPServer
import Identity
import JSON

/// Endpoints without a key: liveness, readiness, the OpenAPI document, metrics.
enum SystemController {
    /// The hand-written OpenAPI document, compiled in from the repository's `openapi.json`.
    static let openAPIDocument: [UInt8] = Array((embeddedOpenAPIDocuments.first?.contents ?? "{}").utf8)

    /// `/healthz`'s data, serialised once: a load balancer asks many times a second.
    static let healthBytes: [UInt8] = JSONValue.object(["status": "ok"]).jsonBytes
    private static let healthOutcome = Outcome.reply(Reply(serializedData: healthBytes))

    static func routes(metrics: Metrics, store: any IdentityStore) -> [Route] {
        [
            Route(method: .GET, path: "/healthz", access: .open, operationID: "getHealth") { _ in
                // Only the bytes: a JSON tree in the reply too would be retained and released
                // with every copy of it. The whole outcome made once: one built here was built
                // twice over, copied and destroyed (~40 instructions and ~2 atomic counts a request).
                healthOutcome
            },
            Route(method: .GET, path: "/readyz", access: .open, operationID: "getReadiness") { _ in
                do {
                    _ = try store.read { ctx in try ctx.workspaceExists(id: "") }
                } catch {
                    throw APIError(.unavailable, message: "The database is not reachable.")
                }
                return .reply(Reply(["status": "ready"]))
            },
            Route(method: .GET, path: "/openapi.json", access: .open, operationID: "getOpenAPIDocument") { _ in
                .reply(
                    Reply(
                        raw: HTTPResponse(
                            status: .ok, headers: ["Content-Type": "application/json"], body: openAPIDocument)))
            },
            Route(method: .GET, path: "/metrics", access: .open, operationID: "getMetrics") { _ in
                .reply(
                    Reply(
                        raw: HTTPResponse(
                            status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                            body: Array(metrics.render().utf8))))
            },
        ]
    }
}
