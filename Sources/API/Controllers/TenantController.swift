import HTTP1
import Identity
import JSON

/// Tenants, their settings and identity secrets (API.md §1, §5, §9).
struct TenantController {
    let store: any IdentityStore
    let usage: any UnverifiedCallLedger

    var routes: [Route] {
        [
            Route(
                method: .POST, path: "/v1/tenants", access: .workspace, operationID: "createTenant", handler: create),
            Route(method: .GET, path: "/v1/tenant", access: .backend, operationID: "getTenant", handler: get),
            Route(
                method: .PATCH, path: "/v1/tenant", access: .backend, operationID: "updateTenant", handler: update),
            Route(
                method: .GET, path: "/v1/tenant/identity-secret", access: .backend, operationID: "getIdentitySecret",
                handler: identitySecret),
            Route(
                method: .POST, path: "/v1/tenant/identity-secret/rotate", access: .backend,
                operationID: "rotateIdentitySecret", handler: rotate),
        ]
    }

    /// `POST /v1/tenants`: the workspace key's workspace gets a tenant; keys are shown this once.
    func create(_ context: RequestContext) throws -> Outcome {
        let body = try context.jsonBody()
        try body.allowOnly(["name"])
        let name = try body.requireString("name")
        guard let workspaceID = context.key?.workspaceID else { throw APIError.unauthorized }
        let now = context.now
        return .write { ctx in
            let created = try Tenancy.createTenant(name: name, workspaceID: workspaceID, in: ctx, now: now)
            return Reply(
                status: .created,
                [
                    "tenant": tenantJSON(created.tenant, counts: (0, 0), unverifiedCalls: 0),
                    "secretKey": .string(created.secretKey.plaintext),
                    "clientKey": .string(created.clientKey.plaintext),
                    "identitySecret": .string(created.identitySecret),
                ])
        }
    }

    func get(_ context: RequestContext) throws -> Outcome {
        let tenant = try context.requireCaller().tenant
        let counts = try store.read { ctx in try ctx.subscriberCounts(tenantID: tenant.id) }
        return .reply(
            Reply(["tenant": tenantJSON(tenant, counts: counts, unverifiedCalls: unverified(tenant, context))]))
    }

    func update(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let patch = try context.jsonBody()
        let calls = unverified(try context.requireCaller().tenant, context)
        return .write { ctx in
            guard let stored = try ctx.tenant(id: tenantID) else { throw IdentityError.tenantNotFound }
            let tenant = stored.with(settings: try stored.settings.applying(patch))
            try ctx.updateTenant(tenant)
            let counts = try ctx.subscriberCounts(tenantID: tenantID)
            return Reply(["tenant": tenantJSON(tenant, counts: counts, unverifiedCalls: calls)])
        }
    }

    func identitySecret(_ context: RequestContext) throws -> Outcome {
        let tenant = try context.requireCaller().tenant
        var data: JSONObject = ["identitySecret": .string(String(decoding: tenant.secrets.current, as: UTF8.self))]
        if let expires = tenant.secrets.previousExpiresAt, expires > context.now.millis {
            data["previousExpiresAt"] = Rendering.time(Timestamp(millis: expires))
        }
        return .reply(Reply(.object(data)))
    }

    func rotate(_ context: RequestContext) throws -> Outcome {
        let tenantID = try context.requireCaller().tenant.id
        let now = context.now
        return .write { ctx in
            let (secret, expires) = try Tenancy.rotateIdentitySecret(tenantID: tenantID, in: ctx, now: now)
            return Reply(["identitySecret": .string(secret), "previousExpiresAt": Rendering.time(expires)])
        }
    }

    private func unverified(_ tenant: TenantRecord, _ context: RequestContext) -> Int {
        usage.unverifiedCalls(tenantID: tenant.id, nowMillis: context.now.millis)
    }
}

/// A tenant as answered: never its secrets.
func tenantJSON(_ tenant: TenantRecord, counts: (identified: Int, verified: Int), unverifiedCalls: Int) -> JSONValue {
    var object: JSONObject = [
        "id": .string(tenant.id), "name": .string(tenant.name), "createdAt": Rendering.time(tenant.createdAt),
    ]
    for (key, value) in tenant.settings.json { object[key] = value }
    object["stats"] = [
        "identifiedSubscribers": Rendering.integer(counts.identified),
        "verifiedSubscribers": Rendering.integer(counts.verified),
        "unverifiedAppCalls24h": Rendering.integer(unverifiedCalls),
    ]
    return .object(object)
}
