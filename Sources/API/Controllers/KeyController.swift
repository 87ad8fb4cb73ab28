import HTTP1
import Identity
import JSON

/// A tenant's API keys: listed without their secret, issued, revoked (API.md §1: keys are
/// stored hashed and shown once). Backend keys only, scoped to the caller's tenant; workspace
/// keys are not listed here.
struct KeyController {
    var routes: [Route] {
        [
            Route(method: .GET, path: "/v1/keys", access: .backend, operationID: "listKeys", handler: list),
            Route(
                method: .POST, path: "/v1/keys", access: .backend, operationID: "createKey", handler: create),
            Route(
                method: .DELETE, path: "/v1/keys/:id", access: .backend, operationID: "revokeKey", handler: revoke),
        ]
    }

    /// `GET /v1/keys`: every secret and client key of the tenant, revoked ones included.
    func list(_ context: RequestContext) throws -> Outcome {
        let tenant = try context.requireCaller().tenant
        let keys = try context.store.read { ctx in try ctx.apiKeys(workspaceID: tenant.workspaceID, tenantID: tenant.id)
        }
        return .reply(Reply(["keys": .array(keys.map(Self.json))]))
    }

    /// `POST /v1/keys {"kind": "client" | "secret"}`: a new key, shown this once, so a leaked
    /// key can be replaced before it is revoked.
    func create(_ context: RequestContext) throws -> Outcome {
        let tenant = try context.requireCaller().tenant
        let body = try context.jsonBody()
        try body.allowOnly(["kind"])
        let kind: KeyKind
        switch try body.requireString("kind") {
        case "client": kind = .client
        case "secret": kind = .secret
        default: throw APIError.invalidRequest("'kind' must be client or secret.")
        }
        let now = context.now
        return .write { ctx in
            let issued = try Tenancy.issueKey(
                kind, workspaceID: tenant.workspaceID, tenantID: tenant.id, in: ctx, now: now)
            return Reply(status: .created, ["key": Self.json(issued.record), "apiKey": .string(issued.plaintext)])
        }
    }

    /// `DELETE /v1/keys/{id}`: revokes at once; the key answers `401 unauthorized` from then on,
    /// also when it is the key making this call.
    func revoke(_ context: RequestContext) throws -> Outcome {
        let tenant = try context.requireCaller().tenant
        let id = try context.parameter("id")
        let now = context.now
        return .write { ctx in
            guard try ctx.revokeAPIKey(id: id, workspaceID: tenant.workspaceID, tenantID: tenant.id, now: now) else {
                throw APIError(.notFound, message: "This tenant has no active key with this id.")
            }
            return Reply(["revoked": true])
        }
    }

    /// A key as listed: never the key itself, which is not stored.
    static func json(_ key: APIKeyRecord) -> JSONValue {
        [
            "id": .string(key.id), "kind": .string(key.kind.rawValue), "prefix": .string(key.displayPrefix),
            "createdAt": Rendering.time(key.createdAt), "revokedAt": key.revokedAt.map(Rendering.time) ?? .null,
        ]
    }
}
