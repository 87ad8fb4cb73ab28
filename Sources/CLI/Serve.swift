import API
import Glibc
import HTTPServer
import Identity
import JSON
import SQLite
import Storage
import WebhookDelivery

/// `buzzkit serve`: migrate, open the store, serve until SIGTERM or SIGINT, then drain.
func serve(_ settings: Settings) throws {
    // Block the shutdown signals before any thread starts, so every thread inherits the mask
    // and only `sigwait` below ever sees them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    signal(SIGPIPE, SIG_IGN)

    let logger = Logger(level: settings.logLevel)
    let metrics = Metrics()
    // One server per SQLite file (API.md §12): held until the process exits. None on PostgreSQL,
    // where any number of servers share the database.
    let lock = try serverLock(settings)
    defer { lock?.release() }
    let store = try openStore(settings, metrics: metrics)
    try store.startMaintenance()
    if let key = settings.bootstrapWorkspaceKey {
        _ = try writeAndWait(store) { ctx in try Tenancy.bootstrapWorkspace(key: key, in: ctx, now: SystemClock().now())
        }
    }

    var configuration = settings.server
    configuration.host = settings.host
    configuration.port = settings.port
    var appConfiguration = settings.application
    appConfiguration.logLevel = settings.logLevel
    if store.readsWaitOnAServer { appConfiguration.handlerThreads = settings.handlerThreads }
    let application = Application(store: store, configuration: appConfiguration, logger: logger, metrics: metrics)
    let server = HTTPServer(configuration: configuration, responder: application)
    let port: Int
    do {
        port = try server.start()
    } catch {
        // Bind failed (port in use, bad host): close the store so no WAL is left behind.
        store.close()
        throw error
    }
    metrics.setGauge("buzzkit_open_connections") { Double(server.metrics.openConnections) }
    // The store's own gauges (SQLite: cache and file size; PostgreSQL: pool use and retries).
    for (name, _) in store.gauges() {
        metrics.setGauge(name) { store.gauges().first { $0.name == name }?.value ?? 0 }
    }
    // The outbox's reader: deliveries run on their own thread, never on a request's.
    let webhooks = DeliveryWorker(
        store: store, transport: try webhookTransport(settings.webhooks.destinations), configuration: settings.webhooks,
        now: { SystemClock().now() }, onAttempt: { metrics.recordWebhookDelivery(result: $0.rawValue) })
    metrics.setGauge("buzzkit_webhook_outbox_pending") {
        Double((try? store.read { try $0.pendingWebhookDeliveryCount() }) ?? 0)
    }
    webhooks.start()

    // stdout may be a pipe (tests, supervisors): write the line unbuffered, in one call.
    let line = Array("listening on http://\(settings.host):\(port)\n".utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    logger.log(.info, "listening", ["host": .string(settings.host), "port": .number(String(port))])

    var received: Int32 = 0
    sigwait(&signals, &received)
    logger.log(.info, "shutting down", ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT")])
    server.shutdown(drainTimeout: .seconds(settings.shutdownDrainSeconds))
    application.close()
    webhooks.stop()
    store.close()
    logger.log(.info, "stopped")
}
