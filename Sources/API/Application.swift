import HTTP1
import HTTPServer
import Identity
import JSON
import WebhookDelivery

/// What a handler produced: an answer now (reads), or a job for the writer (writes).
package enum Outcome: Sendable {
    case reply(Reply)
    /// Runs inside the group-committed write transaction; answered once durable.
    case write(@Sendable (any IdentityWriteContext) throws -> Reply)
}

/// A successful answer, rendered in the envelope unless `raw` is set.
package struct Reply: Sendable {
    package var status: HTTPStatus = .ok
    package var data: JSONValue = .null
    package var warnings: [IdentityWarning] = []
    package var metadata: JSONObject = [:]
    /// A response in its own format (`/openapi.json`, `/metrics`).
    package var raw: HTTPResponse?

    package init(
        status: HTTPStatus = .ok, _ data: JSONValue, warnings: [IdentityWarning] = [], metadata: JSONObject = [:]
    ) {
        self.status = status
        self.data = data
        self.warnings = warnings
        self.metadata = metadata
    }
    package init(raw: HTTPResponse) { self.raw = raw }
}

/// One endpoint: what it is, who may call it, what runs.
package struct Route: Sendable {
    package var method: HTTPMethod
    package var path: String
    package var access: RouteAccess
    /// The `operationId` of this endpoint in `/openapi.json`.
    package var operationID: String
    package var handler: @Sendable (RequestContext) throws -> Outcome
    /// Writes that change keys or tenants: authentication caches records for a second, and these
    /// must apply to the very next request (a revoked key stops at once).
    package var changesAuthentication = false
    /// "GET /v1/subscribers/:id": the route label of logs and metrics, set once by `Application`
    /// rather than interpolated on every request.
    package internal(set) var name = ""
}

/// Settings of the application layer (the HTTP server has its own).
package struct ApplicationConfiguration: Sendable {
    /// Requests per second per client key; 0 turns the limit off.
    package var clientKeyRatePerSecond: Double = 1000
    package var clientKeyBurst: Double = 2000
    package var logLevel: Logger.Level = .info
    /// Where webhook endpoints may point (`webhookAllowPrivateNetworks`, API.md §14).
    package var webhookDestinations = DestinationPolicy(allowPrivateNetworks: false)
    package init() {}
}

/// The BuzzKit API as a `Responder`: routing, authentication, the envelope, errors, access log.
package final class Application: Responder {
    package let store: any IdentityStore
    package let clock: any Clock
    package let logger: Logger
    package let metrics: Metrics
    let authenticator: Authenticator
    let rateLimiter: RateLimiter
    let usage: UnverifiedCallCounter
    /// `Idempotency-Key`s whose first request is running (API.md §13).
    let idempotencyInFlight = IdempotencyInFlight()
    private let router: Router<Route>
    package let routes: [Route]

    package init(
        store: any IdentityStore, configuration: ApplicationConfiguration = .init(), clock: any Clock = SystemClock(),
        logger: Logger? = nil, metrics: Metrics = Metrics()
    ) {
        self.store = store
        self.clock = clock
        self.logger = logger ?? Logger(level: configuration.logLevel)
        self.metrics = metrics
        self.authenticator = Authenticator(store: store)
        self.rateLimiter = RateLimiter(
            ratePerSecond: configuration.clientKeyRatePerSecond, burst: configuration.clientKeyBurst)
        self.usage = UnverifiedCallCounter()
        var routes: [Route] = []
        routes += SystemController.routes(metrics: metrics, store: store)
        routes += TenantController(store: store, usage: usage).routes
        routes += SubscriberController().routes
        routes += IdentifyController().routes
        routes += EventController().routes
        routes += DeviceController().routes
        routes += KeyController().routes
        routes += WebhookController(destinations: configuration.webhookDestinations).routes
        for i in routes.indices { routes[i].name = "\(routes[i].method.rawValue) \(routes[i].path)" }
        self.routes = routes
        var router = Router<Route>()
        for route in routes { router.add(route.method, route.path, route) }
        self.router = router
    }

    package func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let started = monotonicNanos()
        let requestID = Self.requestID(from: request.headers)
        let match = router.match(request.method, path: request.head.path)
        // A local function, not a closure value: the synchronous paths call it without
        // allocating a context; only the write path's callback captures what it needs.
        @Sendable func finish(_ response: HTTPResponse, _ routeName: String, _ tenant: String?) {
            let nanos = monotonicNanos() - started
            metrics.recordRequest(route: routeName, status: response.status.code, nanos: nanos)
            if logger.isEnabled(.info) {
                var fields: JSONObject = [
                    "requestId": .string(requestID), "method": .string(request.method.rawValue),
                    "route": .string(routeName), "status": .number(String(response.status.code)),
                    "durationMs": .number(String(Double(nanos / 1000) / 1000)),
                ]
                if let tenant { fields["tenant"] = .string(tenant) }
                logger.log(.info, "request", fields)
            }
            completion(response)
        }

        let route: Route
        var context = RequestContext(
            request: request, parameters: [:], requestID: requestID, now: clock.now(), caller: nil, key: nil,
            store: store, metrics: metrics)
        switch match {
        case .notFound:
            return finish(Envelope.failure(.notFound, requestID: requestID), "unmatched", nil)
        case .methodNotAllowed(let allowed):
            var error = APIError(
                .methodNotAllowed, code: "method_not_allowed",
                message:
                    "\(request.method.rawValue) is not allowed here; use \(allowed.map(\.rawValue).joined(separator: ", "))."
            )
            error.headers.add(name: "Allow", value: allowed.map(\.rawValue).joined(separator: ", "))
            return finish(Envelope.failure(error, requestID: requestID), "unmatched", nil)
        case .found(let found, let parameters):
            route = found
            context.parameters = parameters
        }
        let routeName = route.name

        do {
            if route.access != .open {
                let auth = try authenticator.authenticate(request.headers, access: route.access, now: context.now)
                context.caller = auth.caller
                context.key = auth.key
                if auth.key.kind == .client, let wait = rateLimiter.take(auth.key.id, nowMillis: context.now.millis) {
                    var error = APIError(
                        .tooManyRequests, code: "rate_limited", message: "Too many requests for this key; retry later.")
                    error.headers.add(name: "Retry-After", value: String(wait))
                    throw error
                }
                // Counted where the proof is checked: only calls on external ids, and a proof in
                // the identify body counts as much as one in a header.
                if let caller = auth.caller, caller.role == .app {
                    let (usage, tenantID, nowMillis) = (usage, caller.tenant.id, context.now.millis)
                    context.caller?.onUnproven = { usage.recordUnverified(tenantID: tenantID, nowMillis: nowMillis) }
                }
            }
            let tenant = context.caller?.tenant.id
            if let claim = try IdempotencyClaim.read(request, route: route, key: context.key, tenantID: tenant) {
                return respondIdempotently(claim, route: route, context: context) { finish($0, routeName, tenant) }
            }
            switch try route.handler(context) {
            case .reply(let reply):
                finish(render(reply, requestID: requestID), routeName, tenant)
            case .write(let job):
                let changesAuth = route.changesAuthentication
                store.write(job) { [self] result in
                    if changesAuth { authenticator.cache.invalidate() }
                    switch result {
                    case .success(let reply): finish(render(reply, requestID: requestID), routeName, tenant)
                    case .failure(let error):
                        finish(render(error, requestID: requestID, route: routeName), routeName, tenant)
                    }
                }
            }
        } catch {
            finish(render(error, requestID: requestID, route: routeName), routeName, context.caller?.tenant.id)
        }
    }

    package func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse {
        let requestID = requestHead.map { Self.requestID(from: $0.headers) } ?? Self.mintRequestID()
        metrics.recordRequest(route: "protocol_error", status: error.status.code, nanos: 0)
        return Envelope.failure(APIError(error.status, code: error.code, message: error.reason), requestID: requestID)
    }

    private func render(_ reply: Reply, requestID: String) -> HTTPResponse {
        if var raw = reply.raw {
            raw.headers.add(name: "X-Request-Id", value: requestID)
            return raw
        }
        return Envelope.success(
            reply.data, status: reply.status, requestID: requestID, warnings: reply.warnings, metadata: reply.metadata)
    }

    private func render(_ error: any Error, requestID: String, route: String) -> HTTPResponse {
        Envelope.failure(
            ErrorMapping.apiError(for: error, logger: logger, requestID: requestID, route: route), requestID: requestID)
    }

    /// Echoes a sane `X-Request-Id`, else mints `req_…`.
    static func requestID(from headers: HTTPHeaders) -> String {
        if let given = headers["X-Request-Id"], !given.isEmpty, given.utf8.count <= 128,
            given.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != 34 && $0 != 92 })
        {
            return given
        }
        return mintRequestID()
    }

    static func mintRequestID() -> String { RequestIDs.mint() }
}

/// The wall clock.
package struct SystemClock: Clock {
    package init() {}
    package func now() -> Timestamp { Timestamp(millis: wallClockMillis()) }
}
