import HTTP1
import HTTPServer
import Identity
import JSON
import Threads
import WebhookDelivery

/// What a handler produced: an answer now (reads), or a job for the writer (writes).
package enum Outcome: Sendable {
    case reply(Reply)
    /// Runs inside the group-committed write transaction; answered once durable.
    case write(@Sendable (any IdentityWriteContext) throws -> Reply)
    /// A subscriber's snapshot, asked of the store without waiting for it; `then` makes the
    /// answer from what was found and the request's context when it arrives. Handed the
    /// context rather than capturing what it needs: a capturing closure was an allocation every
    /// cached GET (~300 instructions with its release, callgrind).
    case snapshot(tenantID: String, id: String, then: @Sendable (SnapshotFound, RequestContext) throws -> Reply)
}

/// What `Outcome.snapshot` found.
package enum SnapshotFound: Sendable {
    /// The snapshot (nil: no one has the id).
    case snapshot(SubscriberSnapshot?)
    /// Only the snapshot cache's kept rendering of it: given to a backend, whose reads have
    /// nothing to check of the snapshot itself (`Access.checkedForRead`), so the snapshot
    /// object, a miss to memory among many cached people, is not reached.
    case rendering(CachedRendering)
}

/// A successful answer, rendered in the envelope unless `raw` is set.
///
/// Small on purpose: every answer is made, moved through `Outcome` and dropped per request, so
/// the fields most answers leave empty (metadata, a raw response, a subscriber to show) live in
/// one shared box, allocated only by the answers that set one of them.
package struct Reply: Sendable {
    // No default values: with them, every initialiser built the reply and then copied it whole
    // (an outlined copy and destroy of each field; ~100 instructions of a `/healthz`).
    package var status: HTTPStatus
    package var data: JSONValue
    package var warnings: [IdentityWarning]
    /// `data` already serialised (a snapshot's JSON, kept with it), sent instead of `data`.
    package var serializedData: [UInt8]?
    private var extras: Extras?

    private final class Extras: Sendable {
        let metadata: JSONObject
        let raw: HTTPResponse?
        let subscriberToShow: ShownSubscriber?
        init(metadata: JSONObject, raw: HTTPResponse?, subscriberToShow: ShownSubscriber?) {
            self.metadata = metadata
            self.raw = raw
            self.subscriberToShow = subscriberToShow
        }
    }

    /// Members added to the envelope's `metadata` beside `requestId`.
    package var metadata: JSONObject {
        get { extras?.metadata ?? JSONObject() }
        set { extras = Extras(metadata: newValue, raw: raw, subscriberToShow: subscriberToShow) }
    }
    /// A response in its own format (`/openapi.json`, `/metrics`).
    package var raw: HTTPResponse? {
        get { extras?.raw }
        set { extras = Extras(metadata: metadata, raw: newValue, subscriberToShow: subscriberToShow) }
    }
    /// Set by a write whose answer shows a subscriber: its snapshot goes into `data.subscriber`
    /// once the write is durable.
    package var subscriberToShow: ShownSubscriber? {
        get { extras?.subscriberToShow }
        set { extras = Extras(metadata: metadata, raw: raw, subscriberToShow: newValue) }
    }

    /// Puts the subscriber to show first in `data`, before what the handler put there (a member
    /// of its own named `subscriber` gives way to it); one the job left to be read after the
    /// commit is read with `read`.
    mutating func showSubscriber(readingAfterCommit read: (SubscriberRecord) throws -> SubscriberSnapshot) rethrows {
        let snapshot: SubscriberSnapshot
        switch subscriberToShow {
        case .snapshot(let readInJob): snapshot = readInJob
        case .afterCommit(let record): snapshot = try read(record)
        case nil: return
        }
        // `{"subscriber":…}` as the snapshot keeps it (a GET of it next sends the same bytes),
        // then the handler's own members after it.
        var bytes = Rendering.subscriberData(snapshot)
        if let members = data.objectValue, !members.isEmpty {
            var out = JSONWriter(capacity: bytes.count + 128)
            out.append(bytes)
            out.dropLast(1)  // the closing brace
            for (name, value) in members where name != "subscriber" {
                out.literal(",")
                out.key(name)
                out.value(value)
            }
            out.literal("}")
            bytes = out.finish()
        }
        serializedData = bytes
        data = .null
        subscriberToShow = nil
    }

    package init(
        status: HTTPStatus = .ok, _ data: JSONValue, warnings: [IdentityWarning] = [], metadata: JSONObject = [:]
    ) {
        self.init(
            status: status, data: data, warnings: warnings, serializedData: nil,
            extras: metadata.isEmpty ? nil : Extras(metadata: metadata, raw: nil, subscriberToShow: nil))
    }

    package init(raw: HTTPResponse) {
        self.init(
            status: .ok, data: .null, warnings: [], serializedData: nil,
            extras: Extras(metadata: [:], raw: raw, subscriberToShow: nil))
    }

    /// `data` already serialised: a snapshot's JSON, kept with it.
    package init(serializedData: [UInt8]) {
        self.init(status: .ok, data: .null, warnings: [], serializedData: serializedData, extras: nil)
    }

    /// Every field set, as each initialiser above ends.
    private init(
        status: HTTPStatus, data: JSONValue, warnings: [IdentityWarning], serializedData: [UInt8]?, extras: Extras?
    ) {
        self.status = status
        self.data = data
        self.warnings = warnings
        self.serializedData = serializedData
        self.extras = extras
    }
}

/// The subscriber a write's answer shows in `data.subscriber`.
package enum ShownSubscriber: Sendable {
    /// Read inside the write job, where the store found it cheap (`snapshotIfCheap`).
    case snapshot(SubscriberSnapshot)
    /// To be read once the write is durable, by a reader rather than on the writer thread.
    case afterCommit(SubscriberRecord)
}

/// One endpoint: what it is, who may call it, what runs.
///
/// A class: the router hands out the same route to every request, and a reference is one
/// retain where a struct of four strings and a closure was six.
package final class Route: Sendable {
    package let method: HTTPMethod
    package let path: String
    package let access: RouteAccess
    /// The `operationId` of this endpoint in `/openapi.json`.
    package let operationID: String
    package let handler: @Sendable (RequestContext) throws -> Outcome
    /// False for a handler that never waits on the store (it asks by `Outcome.snapshot`): it
    /// runs on the event loop even when other handlers go to handler threads.
    package let handlerWaits: Bool
    /// "GET /v1/subscribers/:id": the route label of logs and metrics, made once.
    package let name: String
    /// A mutating `/v1` route: the ones an `Idempotency-Key` applies to (API.md §13). Decided
    /// once here, not by comparing the method and path of every request.
    let takesIdempotencyKey: Bool

    package init(
        method: HTTPMethod, path: String, access: RouteAccess, operationID: String,
        handler: @escaping @Sendable (RequestContext) throws -> Outcome, handlerWaits: Bool = true
    ) {
        self.method = method
        self.path = path
        self.access = access
        self.operationID = operationID
        self.handler = handler
        self.handlerWaits = handlerWaits
        self.name = "\(method.rawValue) \(path)"
        self.takesIdempotencyKey =
            [HTTPMethod.POST, .PUT, .PATCH, .DELETE].contains(method) && path.hasPrefix("/v1/")
    }
}

/// Settings of the application layer (the HTTP server has its own).
package struct ApplicationConfiguration: Sendable {
    /// Requests per second per client key; 0 turns the limit off.
    package var clientKeyRatePerSecond: Double = 1000
    package var clientKeyBurst: Double = 2000
    package var logLevel: Logger.Level = .info
    /// Where webhook endpoints may point (`webhookAllowPrivateNetworks`, API.md §14).
    package var webhookDestinations = DestinationPolicy(allowPrivateNetworks: false)
    /// Threads that run handlers off the event loops; 0 runs them on the event loop. For a store
    /// whose reads wait on a database server (PostgreSQL): a handler blocked on a round trip
    /// would stall every connection of its loop, and reads asked at the same time are what
    /// the store batches.
    package var handlerThreads = 0
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
    let usage: any UnverifiedCallLedger
    /// `Idempotency-Key`s whose first request is running (API.md §13).
    let idempotencyInFlight = IdempotencyInFlight()
    /// Slots are indices into `routes` and `metricsSlots`.
    private let router: Router
    package let routes: [Route]
    /// Where each route's requests are counted in `metrics` (`Metrics.routeSlot`).
    private let metricsSlots: [Int]
    /// Where handlers run when the event loops must not wait (`handlerThreads`).
    private let handlerPool: BlockingWorkPool?
    /// `Metrics` slots of requests no route answered.
    private let unmatchedSlot: Int
    private let protocolErrorSlot: Int

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
        // A store that keeps the count itself (PostgreSQL: across servers) is used; otherwise
        // this process counts (SQLite: one process serves the file).
        self.usage = (store as? any UnverifiedCallLedger) ?? UnverifiedCallCounter()
        handlerPool =
            configuration.handlerThreads > 0
            ? BlockingWorkPool(threads: configuration.handlerThreads, name: "handler") : nil
        // The store says when keys or tenants changed, whoever changed them, so no route has to.
        if let source = store as? any AuthenticationChangeSource {
            source.onAuthenticationChange { [cache = authenticator.cache] in cache.invalidate() }
        }
        var routes: [Route] = []
        routes += SystemController.routes(metrics: metrics, store: store)
        routes += TenantController(store: store, usage: usage).routes
        routes += SubscriberController().routes
        routes += IdentifyController().routes
        routes += EventController().routes
        routes += DeviceController().routes
        routes += KeyController().routes
        routes += WebhookController(destinations: configuration.webhookDestinations).routes
        routes += DashboardController.routes
        self.routes = routes
        metricsSlots = routes.map { metrics.routeSlot($0.name) }
        unmatchedSlot = metrics.routeSlot("unmatched")
        protocolErrorSlot = metrics.routeSlot("protocol_error")
        var router = Router()
        for (slot, route) in routes.enumerated() { router.add(route.method, route.path, slot: slot) }
        self.router = router
    }

    /// Answers one request in named steps: match the route, admit the caller (key, rate limit,
    /// usage counting), dispatch to the handler (a read now, a write once durable), finish (metrics,
    /// access log, completion). Each step is a method, so none of them allocates a closure on the
    /// synchronous paths; only a write's callback captures what it needs (bench/README.md).
    package func respond(to request: HTTPRequest, completion: ResponseCompletion) {
        var exchange = Exchange(
            method: request.method, requestID: Self.requestID(from: request.headers), started: monotonicNanoseconds(),
            completion: completion)
        var context = RequestContext(
            request: request, parameters: PathParameters(), requestID: exchange.requestID, now: clock.now(),
            caller: nil, key: nil, store: store, metrics: metrics)
        do {
            let slot = try match(request, into: &context)
            // The route by its slot, its fields read in place: binding the Route object retained
            // it, and every request on both loops counted references to the same few routes, so
            // their count's cache line moved between the cores at each request (perf: the
            // costliest retain of a cached GET).
            exchange.routeSlot = slot
            exchange.metricsSlot = metricsSlots[slot]
            try admit(access: routes[slot].access, &context)
            exchange.noteTenant(of: context, ifLogged: logger)
            if let handlerPool, routes[slot].handlerWaits {
                let (context, exchange) = (context, exchange)
                handlerPool.submit { [self] in dispatchCatching(slot, context, exchange) }
            } else {
                try dispatch(slot, context, exchange)
            }
        } catch {
            exchange.noteTenant(of: context, ifLogged: logger)
            finish(exchange, render(error, requestID: exchange.requestID, route: routeName(exchange)))
        }
    }

    // MARK: - The steps of respond

    /// One request on its way through `respond`: what the last step needs to log and answer.
    private struct Exchange: Sendable {
        /// The method, for the access log; not the request, which the context holds: a second
        /// reference to it was a retain and a release more a request.
        let method: HTTPMethod
        let requestID: String
        let started: UInt64
        let completion: ResponseCompletion
        /// The route once one matched (its index in `routes`, not a reference every request would
        /// retain and release), and where its request is counted.
        var routeSlot: Int?
        var metricsSlot: Int?
        /// The caller's tenant, for the access log; nil when requests are not logged.
        var tenant: String?

        /// Takes the tenant id only when the access log prints it: a tenant id is a heap string,
        /// so carrying it in every exchange cost a retain and a release a request (more for a
        /// write, whose callback copies the exchange) that nothing read at `warn`.
        mutating func noteTenant(of context: RequestContext, ifLogged logger: Logger) {
            if logger.isEnabled(.info) { tenant = context.caller?.tenant.id }
        }
    }

    /// Routing: the route's slot and its path parameters, or 404 / 405 with `Allow`.
    private func match(_ request: HTTPRequest, into context: inout RequestContext) throws(APIError) -> Int {
        switch router.match(request.method, target: request.head.target) {
        case .notFound:
            throw .notFound
        case .methodNotAllowed(let allowed):
            let methods = allowed.map(\.rawValue).joined(separator: ", ")
            var error = APIError(
                .methodNotAllowed, message: "\(request.method.rawValue) is not allowed here; use \(methods).")
            error.headers.add(name: "Allow", value: methods)
            throw error
        case .found(let slot, let parameters):
            context.parameters = parameters
            return slot
        }
    }

    /// Authentication, the client key's rate limit, and the hook that counts unverified app calls.
    private func admit(access: RouteAccess, _ context: inout RequestContext) throws {
        if case .open = access { return }
        var auth = try authenticator.authenticate(context.request.headers, access: access, now: context.now)
        // Kinds and roles matched, not compared: `==` reached their witness tables from here.
        if case .client = auth.key.kind, let wait = rateLimiter.take(auth.key.id, nowMillis: context.now.millis) {
            var error = APIError(.rateLimited, message: "Too many requests for this key; retry later.")
            error.headers.add(name: "Retry-After", value: String(wait))
            throw error
        }
        // Counted where the proof is checked: only calls on external ids, and a proof in the
        // identify body counts as much as one in a header.
        if case .app? = auth.caller?.role, let tenantID = auth.caller?.tenant.id {
            let (usage, nowMillis) = (usage, context.now.millis)
            auth.caller?.onUnproven = { usage.recordUnverifiedCall(tenantID: tenantID, nowMillis: nowMillis) }
        }
        context.key = auth.key
        context.caller = auth.caller
    }

    /// Stops the handler threads once the handlers already queued have run (after the server
    /// stopped taking requests, before the store closes).
    package func close() {
        handlerPool?.close()
    }

    /// `dispatch` on a handler thread, where nothing above catches.
    private func dispatchCatching(_ slot: Int, _ context: RequestContext, _ exchange: Exchange) {
        do {
            try dispatch(slot, context, exchange)
        } catch {
            finish(exchange, render(error, requestID: exchange.requestID, route: routeName(exchange)))
        }
    }

    /// Runs the handler: a read is answered now, a write once its group committed.
    private func dispatch(_ slot: Int, _ context: RequestContext, _ exchange: Exchange) throws {
        // Reads (most requests) take no key: asked first, so they copy out no tenant id for it.
        if routes[slot].takesIdempotencyKey,
            let claim = try IdempotencyClaim.read(
                context.request, route: routes[slot], key: context.key, tenantID: context.caller?.tenant.id)
        {
            return respondIdempotently(claim, route: routes[slot], context: context) { [self] in finish(exchange, $0) }
        }
        switch try routes[slot].handler(context) {
        case .reply(let reply):
            finish(exchange, render(reply, requestID: exchange.requestID))
        case .write(let job):
            // Key and tenant changes reach the auth cache from the store (AuthenticationChangeSource).
            store.write(job) { [self] result in
                // An answer that shows a subscriber reads it: on a handler thread, not the writer's.
                if let handlerPool, case .success(let reply) = result, case .afterCommit = reply.subscriberToShow {
                    handlerPool.submit { [self] in finishWrite(result, exchange) }
                } else {
                    finishWrite(result, exchange)
                }
            }
        case .snapshot(let tenantID, let id, let then):
            // A cache hit is answered here, without the store's completion closure.
            let cached: SnapshotFound?
            if case .backend? = context.caller?.role, let rendering = store.cachedRendering(tenantID: tenantID, id: id)
            {
                cached = .rendering(rendering)
            } else {
                cached = store.cachedSnapshot(tenantID: tenantID, id: id).map { .snapshot($0) }
            }
            if let cached {
                let response: HTTPResponse
                do {
                    response = render(try then(cached, context), requestID: exchange.requestID)
                } catch {
                    response = render(error, requestID: exchange.requestID, route: routeName(exchange))
                }
                return finish(exchange, response)
            }
            store.snapshot(tenantID: tenantID, id: id) { [self] result in
                do {
                    finish(exchange, render(try then(.snapshot(result.get()), context), requestID: exchange.requestID))
                } catch {
                    finish(exchange, render(error, requestID: exchange.requestID, route: routeName(exchange)))
                }
            }
        }
    }

    /// A durable write's answer, with the subscriber it shows read now (off the writer thread).
    private func finishWrite(_ result: Result<Reply, any Error>, _ exchange: Exchange) {
        do {
            var reply = try result.get()
            try reply.showSubscriber(readingAfterCommit: snapshotAfterCommit)
            finish(exchange, render(reply, requestID: exchange.requestID))
        } catch {
            finish(exchange, render(error, requestID: exchange.requestID, route: routeName(exchange)))
        }
    }

    /// The subscriber a write showed, read after its commit. That read sees the write (or a later
    /// one); if the person is gone by then (deleted by a later write), the answer shows the row
    /// as this write left it, without its collections.
    private func snapshotAfterCommit(_ record: SubscriberRecord) throws -> SubscriberSnapshot {
        if let snapshot = try store.snapshot(tenantID: record.tenantID, id: record.id),
            snapshot.record.key == record.key
        {
            return snapshot
        }
        return SubscriberSnapshot(
            record: record, attributes: [], aliases: [], pushSubscriptions: [], preferences: [], devices: [])
    }

    /// The route label of logs and metrics.
    private func routeName(_ exchange: Exchange) -> String {
        exchange.routeSlot.map { routes[$0].name } ?? "unmatched"
    }

    /// Metrics, the access log line, then the answer.
    private func finish(_ exchange: Exchange, _ response: consuming HTTPResponse) {
        let nanos = monotonicNanoseconds() - exchange.started
        metrics.recordRequest(
            slot: exchange.metricsSlot ?? unmatchedSlot, status: response.status.code, nanos: nanos)
        if logger.isEnabled(.info) {
            var fields: JSONObject = [
                "requestId": .string(exchange.requestID), "method": .string(exchange.method.rawValue),
                "route": .string(routeName(exchange)), "status": .number(String(response.status.code)),
                "durationMs": .number(String(Double(nanos / 1000) / 1000)),
            ]
            if let tenant = exchange.tenant { fields["tenant"] = .string(tenant) }
            logger.log(.info, "request", fields)
        }
        exchange.completion(response)
    }

    package func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse {
        let requestID = requestHead.map { Self.requestID(from: $0.headers) } ?? Self.mintRequestID()
        metrics.recordRequest(slot: protocolErrorSlot, status: error.status.code, nanos: 0)
        return Envelope.failure(APIError(error.status, code: error.code, message: error.reason), requestID: requestID)
    }

    private func render(_ reply: Reply, requestID: String) -> HTTPResponse {
        Envelope.response(for: reply, requestID: requestID)
    }

    private func render(_ error: any Error, requestID: String, route: String) -> HTTPResponse {
        Envelope.failure(
            ErrorMapping.apiError(for: error, logger: logger, requestID: requestID, route: route), requestID: requestID)
    }

    /// Echoes a sane `X-Request-Id`, else mints `req_…`.
    static func requestID(from headers: HTTPHeaders) -> String {
        if let given = headers["X-Request-Id"], !given.isEmpty, given.utf8.count <= 128,
            Envelope.isClean(requestID: given)
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
