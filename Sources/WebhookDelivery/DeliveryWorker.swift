import Glibc
import Identity
import Synchronization
import Threads
import WebhookSigning

/// The outbox reader of one server (API.md §14): its own thread takes the due attempts in order,
/// signs and sends each, records how it went, and schedules the retry. Nothing on the request
/// path waits for it. It also purges expired idempotency records, a small batch at a time.
package final class DeliveryWorker: Sendable {
    package struct Configuration: Sendable {
        /// Seconds before each retry; one retry per entry, then the event is given up.
        package var retryScheduleSeconds = [5, 300, 1800, 7200, 18000, 36000, 36000]
        /// Up to this fraction of each wait is added or removed at random, so endpoints that
        /// failed together do not all come back in the same second.
        package var jitter = 0.1
        /// Success is a 2xx within this time.
        package var timeout: Duration = .seconds(15)
        /// How often the outbox is looked at when it had nothing due.
        package var pollInterval: Duration = .milliseconds(200)
        /// Attempts read per look.
        package var batchSize = 32
        package var destinations = DestinationPolicy(allowPrivateNetworks: false)
        /// Idempotency records are kept this long (API.md §13: at least 24 hours).
        package var idempotencyRetention: Duration = .seconds(25 * 3600)
        /// Records deleted per purge job: small, so the write group carrying it barely notices.
        package var purgeBatch = 500
        package var purgeInterval: Duration = .seconds(60)
        /// The worker thread's nice value. Deliveries are never urgent to the millisecond, so when
        /// the cores are busy, requests come first and the backlog is sent in the gaps; on an idle
        /// machine the value changes nothing.
        package var niceness: Int32 = 10
        package init() {}
    }

    /// How one attempt ended, for `/metrics`.
    package enum Result: String, Sendable {
        case succeeded, failed, disabled
    }

    private let store: any IdentityStore
    private let transport: any DeliveryTransport
    private let configuration: Configuration
    private let now: @Sendable () -> Timestamp
    private let onAttempt: @Sendable (Result) -> Void
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)

    /// - Parameters:
    ///   - now: the wall clock (tests pass their own).
    ///   - onAttempt: called after each recorded attempt, for metrics.
    package init(
        store: any IdentityStore, transport: any DeliveryTransport, configuration: Configuration = .init(),
        now: @escaping @Sendable () -> Timestamp, onAttempt: @escaping @Sendable (Result) -> Void = { _ in }
    ) {
        self.store = store
        self.transport = transport
        self.configuration = configuration
        self.now = now
        self.onAttempt = onAttempt
    }

    /// Starts the worker thread.
    package func start() {
        running.store(true, ordering: .sequentiallyConsistent)
        NamedThread.detach(name: "buzzkit-webhooks") { [self] in
            NamedThread.lowerCurrentPriority(to: configuration.niceness)
            var lastPurge: Int64 = 0
            while !stopping.load(ordering: .relaxed) {
                let sent = runOnce()
                let millis = now().millis
                if millis - lastPurge >= configuration.purgeInterval.milliseconds {
                    lastPurge = millis
                    runMaintenance()
                }
                if sent == 0 { sleep(configuration.pollInterval) }
            }
            running.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Asks the thread to stop and waits (a send in progress may take up to its timeout; the
    /// wait gives up after `limit`, the attempt then stays pending and is sent again later).
    package func stop(waitingAtMost limit: Duration = .seconds(2)) {
        stopping.store(true, ordering: .sequentiallyConsistent)
        let deadline = ContinuousClock.now + limit
        while running.load(ordering: .sequentiallyConsistent) && ContinuousClock.now < deadline {
            usleep(10_000)
        }
    }

    /// Sends every attempt due now, in order. Returns how many were made (it may be fewer than
    /// were due: not after a `410` from the same endpoint, nor once stopping).
    @discardableResult
    package func runOnce() -> Int {
        let at = now()
        let (limit, lease) = (configuration.batchSize, Timestamp(millis: at.millis + leaseMillis))
        guard hasWork({ try $0.webhookDeliveryMayBeDue(now: at) }) else { return 0 }
        guard
            let due = blockingWrite({ ctx in
                try ctx.claimDueWebhookDeliveries(now: at, limit: limit, leaseUntil: lease)
            }), !due.isEmpty
        else { return 0 }
        // An endpoint that answered 410 in this batch gets nothing more (its pending rows are failed).
        var disabled: Set<Int64> = []
        var outcomes: [Outcome] = []
        for delivery in due where !disabled.contains(delivery.endpointKey) {
            if stopping.load(ordering: .relaxed) { break }
            let outcome = attempt(delivery)
            if outcome.result == .disabled { disabled.insert(delivery.endpointKey) }
            outcomes.append(outcome)
        }
        // One write records the whole batch: the writer serves requests, and a job per attempt
        // would cost them a share of its groups. A crash before it only means these go out again.
        let batch = outcomes
        let recorded = blockingWrite { ctx in
            for o in batch {
                try ctx.completeWebhookDelivery(
                    key: o.key, succeeded: o.result == .succeeded, responseStatus: o.status, error: o.error,
                    now: o.finished, retryAt: o.retryAt)
                if o.result == .disabled { try ctx.disableWebhookEndpoint(key: o.endpointKey, now: o.finished) }
            }
        }
        if recorded { for o in outcomes { onAttempt(o.result) } }
        return outcomes.count
    }

    /// How one attempt went, recorded with the rest of its batch.
    private struct Outcome: Sendable {
        var key: Int64
        var endpointKey: Int64
        var result: Result
        var status: Int?
        var error: String?
        var finished: Timestamp
        var retryAt: Timestamp?
    }

    private func attempt(_ delivery: DueWebhookDelivery) -> Outcome {
        let started = now()
        let timestamp = started.millis / 1000
        let body = Array(delivery.body.utf8)
        var status: Int?
        var failure: String?
        if let signature = try? WebhookSignature.sign(
            secret: delivery.secret, id: delivery.eventID, timestamp: timestamp, body: body)
        {
            do {
                // Checked again at send time: the name may resolve elsewhere than when it was registered.
                try configuration.destinations.check(delivery.url)
                status = try transport.post(
                    url: delivery.url,
                    headers: [
                        ("Content-Type", "application/json"), ("User-Agent", "BuzzKit-Webhooks/1"),
                        ("webhook-id", delivery.eventID), ("webhook-timestamp", String(timestamp)),
                        ("webhook-signature", signature),
                    ], body: body, timeout: configuration.timeout)
            } catch {
                failure = "\(error)"
            }
        } else {
            failure = "the endpoint's secret is not a whsec_ secret"
        }
        let finished = now()
        let succeeded = status.map { (200..<300).contains($0) } ?? false
        let gone = status == 410
        if !succeeded && failure == nil { failure = "HTTP \(status ?? 0)" }
        let retryAt = succeeded || gone ? nil : retryTime(after: delivery.attempt, from: finished)
        let result: Result = succeeded ? .succeeded : gone ? .disabled : .failed
        return Outcome(
            key: delivery.key, endpointKey: delivery.endpointKey, result: result, status: status,
            error: gone ? "410 Gone: endpoint disabled" : failure, finished: finished, retryAt: retryAt)
    }

    /// When attempt `attempt` (1 = the first) failed: the schedule's wait with jitter, or nil
    /// once every retry was used.
    func retryTime(after attempt: Int, from time: Timestamp) -> Timestamp? {
        guard attempt >= 1, attempt <= configuration.retryScheduleSeconds.count else { return nil }
        let base = Double(configuration.retryScheduleSeconds[attempt - 1]) * 1000
        let spread = base * configuration.jitter
        let wait = base + (spread > 0 ? Double.random(in: -spread...spread) : 0)
        return Timestamp(millis: time.millis + Int64(max(0, wait)))
    }

    /// The worker's periodic upkeep (every `purgeInterval`): expired idempotency records go, and
    /// attempts left pending on a disabled endpoint are failed (see
    /// ``IdentityWriteContext/failPendingOfDisabledEndpoints()``).
    ///
    /// Each step looks for work before it writes (`hasWork`), as the polls do: most minutes
    /// neither has any, and an idle server then writes nothing at all.
    package func runMaintenance() {
        purgeIdempotencyRecords()
        if hasWork({ try $0.disabledEndpointsHavePending() }) {
            _ = blockingWrite { ctx in _ = try ctx.failPendingOfDisabledEndpoints() }
        }
    }

    private func purgeIdempotencyRecords() {
        let cutoff = Timestamp(millis: now().millis - configuration.idempotencyRetention.milliseconds)
        let batch = configuration.purgeBatch
        var more = true
        while more && !stopping.load(ordering: .relaxed) {
            guard hasWork({ try $0.idempotencyRecordsExist(createdBefore: cutoff) }) else { return }
            let purged = Mutex(0)
            guard
                blockingWrite({ ctx in
                    let n = try ctx.purgeIdempotencyRecords(createdBefore: cutoff, limit: batch)
                    purged.withLock { $0 = n }
                })
            else { return }
            more = purged.withLock { $0 } == batch
        }
    }

    /// How long a claimed attempt stays out of other workers' reach: past one send's timeout, yet
    /// short enough that a dead worker's claims come back soon. A batch of slow receivers may
    /// outlast it and an attempt then goes out twice, which at-least-once delivery allows.
    private var leaseMillis: Int64 { configuration.timeout.milliseconds + 15_000 }

    /// The look the worker takes before each of its writes. Every write is a job for the writer,
    /// and on SQLite each write group ends in a sync of the log: polling with writes kept an
    /// idle server's disk syncing five times a second. A look that fails says yes, so the write
    /// runs as it did before there were looks.
    private func hasWork(_ probe: (any IdentityReadContext) throws -> Bool) -> Bool {
        (try? store.read(probe)) ?? true
    }

    /// Runs `body` as one write job and waits for its commit. False when it failed.
    private func blockingWrite(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> Void) -> Bool {
        blockingWrite({ ctx -> Bool in
            try body(ctx)
            return true
        }) ?? false
    }

    /// Runs `body` as one write job and waits for its commit; nil when it failed.
    private func blockingWrite<T: Sendable>(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> T) -> T? {
        let done = Semaphore()
        let outcome = Mutex<T?>(nil)
        store.write({ ctx in try body(ctx) }) { result in
            if case .success(let value) = result { outcome.withLock { $0 = value } }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 }
    }

    private func sleep(_ interval: Duration) {
        usleep(UInt32(max(0, interval.milliseconds) * 1000))
    }
}

extension Duration {
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
