import API
import Dispatch
import Foundation
import HTTP1
import HTTPServer
import Identity
import Storage

/// The application without sockets: an `Application` over a store on a fresh database (SQLite on
/// a temporary file, or PostgreSQL), a manual clock, and a workspace key to make tenants with. Requests go straight to
/// `respond(to:completion:)`, so most API tests run in milliseconds.
///
/// ```swift
/// let app = try InProcessApp()
/// defer { app.close() }
/// let tenant = try app.createTenant()
/// let response = try app.send("GET", "/v1/tenant", headers: tenant.backend)
/// ```
package final class InProcessApp: @unchecked Sendable {
    package let clock: ManualClock
    package let store: any IdentityStore & StoreLifecycle
    package let application: Application
    private let testStore: TestStore
    /// The `--database` value of the store: a SQLite path or a PostgreSQL URL.
    package var database: String { testStore.database }
    /// A workspace key made for this app, for `POST /v1/tenants`.
    package let workspaceKey: String
    package let workspaceID: String

    /// - Parameters:
    ///   - store: The engine; SQLite by default.
    ///   - configuration: application settings (rate limits) for this app.
    package init(
        store kind: StoreKind = .sqlite, configuration: ApplicationConfiguration = .init(),
        clock: ManualClock = ManualClock()
    ) throws {
        testStore = try TestStore(kind)
        store = testStore.store
        self.clock = clock
        let now = clock.now()
        let issued = try store.writeAndWait { ctx in try Tenancy.createWorkspace(name: "test", in: ctx, now: now) }
        workspaceKey = issued.plaintext
        workspaceID = issued.record.workspaceID
        var quiet = configuration
        quiet.logLevel = .error
        application = Application(store: store, configuration: quiet, clock: clock)
    }

    /// A second app on the same PostgreSQL database as `other`: another server, in process,
    /// with its own store, pool and caches. The workspace key of `other` works on both.
    package init(sharing other: InProcessApp, configuration: ApplicationConfiguration = .init()) throws {
        testStore = try TestStore(sharing: other.testStore)
        store = testStore.store
        clock = other.clock
        workspaceKey = other.workspaceKey
        workspaceID = other.workspaceID
        var quiet = configuration
        quiet.logLevel = .error
        application = Application(store: store, configuration: quiet, clock: clock)
    }

    /// Closes the store and removes the database.
    package func close() {
        testStore.close()
    }

    /// Sends a request with an optional JSON body (any `JSONSerialization` value) and waits for the answer.
    package func send(
        _ method: String, _ path: String, json: Any? = nil, headers: [String: String] = [:]
    ) throws -> HTTPClient.Response {
        var body: [UInt8] = []
        var fields = headers
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
            if fields["Content-Type"] == nil { fields["Content-Type"] = "application/json" }
        }
        return send(method, path, body: body, headers: fields)
    }

    /// Sends raw body bytes and waits for the answer.
    package func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String] = [:])
        -> HTTPClient.Response
    {
        var fields = HTTPHeaders()
        fields.add(name: "Host", value: "localhost")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { fields.add(name: name, value: value) }
        let head = HTTPRequestHead(
            method: HTTPMethod(rawValue: method), target: path, version: .http1_1, headers: fields)
        let done = DispatchSemaphore(value: 0)
        let box = ResponseBox()
        application.respond(to: HTTPRequest(head: head, body: body)) { response in
            box.response = response
            done.signal()
        }
        done.wait()
        let response = box.response!
        return HTTPClient.Response(
            status: response.status.code, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }

    /// Creates a tenant through `POST /v1/tenants` with this app's workspace key.
    package func createTenant(name: String = "acme") throws -> TestTenant {
        let response = try send(
            "POST", "/v1/tenants", json: ["name": name], headers: ["Authorization": "Bearer \(workspaceKey)"])
        return try TestTenant(created: response)
    }
}

extension InProcessApp {
    /// A tenant in a workspace of its own, made directly in the store: its keys, and the
    /// workspace key that owns it.
    package func createTenantInNewWorkspace(name: String = "elsewhere") throws -> (
        tenant: TestTenant, workspaceKey: String
    ) {
        let now = clock.now()
        let (workspaceKey, created) = try store.writeAndWait { ctx in
            let workspace = try Tenancy.createWorkspace(name: name, in: ctx, now: now)
            return (
                workspace.plaintext,
                try Tenancy.createTenant(name: name, workspaceID: workspace.record.workspaceID, in: ctx, now: now)
            )
        }
        let tenant = TestTenant(
            id: created.tenant.id, secretKey: created.secretKey.plaintext, clientKey: created.clientKey.plaintext,
            identitySecret: created.identitySecret)
        return (tenant, workspaceKey)
    }

    /// Revokes a key directly in the store, as an operator would.
    package func revoke(key plaintext: String) throws {
        let now = clock.now()
        let hash = Tenancy.hash(key: plaintext)
        let revoked = try store.writeAndWait { ctx -> Bool in
            guard let record = try ctx.apiKey(hash: hash) else { return false }
            return try ctx.revokeAPIKey(
                id: record.id, workspaceID: record.workspaceID, tenantID: record.tenantID, now: now)
        }
        guard revoked else { throw TestFailure("no such active key") }
    }
}

/// Carries the response from the completion's thread to the waiting one (the semaphore orders them).
private final class ResponseBox: @unchecked Sendable {
    var response: HTTPResponse?
}

extension TestTenant {
    /// Reads the keys out of a `201` answer of `POST /v1/tenants`.
    package init(created response: HTTPClient.Response) throws {
        guard response.status == 201, let data = response.data, let tenant = data["tenant"] as? [String: Any],
            let id = tenant["id"] as? String, let secretKey = data["secretKey"] as? String,
            let clientKey = data["clientKey"] as? String, let identitySecret = data["identitySecret"] as? String
        else { throw TestFailure("tenant creation failed: \(response.status) \(response.text)") }
        self.init(id: id, secretKey: secretKey, clientKey: clientKey, identitySecret: identitySecret)
    }
}

extension TestTenant {
    /// Reads the keys out of what `buzzkit tenant create` printed:
    /// `{tenant: {id, name}, secretKey, clientKey, identitySecret}`.
    package init(tenantCreateOutput output: String) throws {
        guard let json = try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
            let tenant = json["tenant"] as? [String: Any], let id = tenant["id"] as? String,
            let secretKey = json["secretKey"] as? String, let clientKey = json["clientKey"] as? String,
            let identitySecret = json["identitySecret"] as? String
        else { throw TestFailure("unexpected tenant create output: \(output)") }
        self.init(id: id, secretKey: secretKey, clientKey: clientKey, identitySecret: identitySecret)
    }
}

extension TestTenant {
    /// The identity hash a backend would hand the app for `externalID`, with this tenant's secret.
    package func identityHash(_ externalID: String, secret: String? = nil) -> String {
        IdentityVerifier.identityHash(
            externalId: externalID, secret: IdentityVerifier.key(fromSecret: secret ?? identitySecret))
    }

    /// App headers carrying a proof for `externalID`.
    package func app(provenFor externalID: String, secret: String? = nil) -> [String: String] {
        app.merging(["BuzzKit-Identity-Hash": identityHash(externalID, secret: secret)]) { $1 }
    }
}

// MARK: - Identity tokens for tests

/// Mints JWTs for verification tests, including deliberately broken ones. The HMAC comes from
/// `IdentityVerifier.identityHash` (hex HMAC-SHA256), so the JSON and base64url here are
/// independent of the server's own JWT code.
package enum TestTokens {
    /// `header.payload.signature` with the given header and claims, signed HS256 with `secret`.
    package static func make(
        header: [String: Any] = ["alg": "HS256", "typ": "JWT"], claims: [String: Any], secret: String
    ) -> String {
        let input = segment(header) + "." + segment(claims)
        return input + "." + base64URL(hmac(input, secret: secret))
    }

    /// A token for `subject` expiring `seconds` after `nowMillis`.
    package static func valid(subject: String, nowMillis: Int64, expiresIn seconds: Int64 = 3600, secret: String)
        -> String
    {
        make(claims: ["sub": subject, "exp": nowMillis / 1000 + seconds], secret: secret)
    }

    /// HMAC-SHA256 of `message` under the secret string's UTF-8 bytes.
    package static func hmac(_ message: String, secret: String) -> [UInt8] {
        let hex = Array(
            IdentityVerifier.identityHash(externalId: message, secret: IdentityVerifier.key(fromSecret: secret)).utf8)
        return stride(from: 0, to: hex.count, by: 2).map {
            UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }

    package static func segment(_ object: [String: Any]) -> String {
        base64URL(Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
    }

    package static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
