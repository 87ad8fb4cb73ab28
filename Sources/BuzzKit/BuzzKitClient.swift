import Foundation

/// What this device knows about who it is, saved in the `CredentialStore` between launches.
struct DeviceState: Codable, Sendable, Equatable {
    /// This install's id: the push subscription's `deviceId`, kept across logouts.
    var deviceId: String
    var anonymousId: String
    var externalId: String?
    var identityHash: String?
    var identityToken: String?
    /// Every anonymous id this device used before, so a new one never repeats one.
    var previousAnonymousIds: [String] = []
    /// The last identify sent (minus the anonymous id): the same again sends nothing.
    var identifyFingerprint: String?
    var pushToken: String?
    var permission: String?
}

/// The queue's counters, for diagnostics and tests.
public struct QueueStatus: Sendable, Equatable {
    /// Operations (requests to be) not yet sent.
    public var pending: Int
    /// Events among them.
    public var queuedEvents: Int
    /// Events dropped because the queue was full (oldest first), since the client started.
    public var droppedEvents: Int
    /// Operations given up: refused by the server (4xx) or past the attempt or age cap.
    public var rejectedOperations: Int
}

/// The BuzzKit client: one device's identity and its persisted, ordered queue of calls.
///
/// Every call returns at once, after its operation is appended to the queue on disk; one
/// background thread sends the queue in order. `BuzzKit.identify(…)` and friends are the same
/// calls on a shared client made by `BuzzKit.configure(…)`.
///
/// ```swift
/// let client = BuzzKitClient(clientKey: "bk_client_…", baseURL: URL(string: "https://push.example.com")!)
/// client.track("onboarding_started", properties: ["step": 1])
/// client.identify("user_42", identityHash: hash)
/// let drained = await client.flush(timeout: .seconds(5))
/// ```
public final class BuzzKitClient: @unchecked Sendable {
    public let clientKey: String
    public let baseURL: URL
    public let storageDirectory: URL
    public let configuration: Configuration

    private let lock = NSLock()
    private let outbox: Outbox
    private let store: any CredentialStore
    private var state: DeviceState
    private let device: DeviceContext
    private let transport: any Transport
    private let clock: any WallClock
    private let jitter: any JitterSource
    private let delivery: DeliveryThread?
    private let storageLock: StorageLock
    private var syncTimer: (any DispatchSourceTimer)?

    // Retry state of the head batch.
    private var failures = 0
    private var answeredFailures = 0
    private var notBefore: Date?
    private var notBeforeIsServers = false
    private var rejected = 0
    /// Identify bodies rewritten after a 400 on an optional field, by seq (not persisted: the
    /// same answer leads to the same rewrite after a relaunch).
    private var identifyOverrides: [UInt64: [UInt8]] = [:]
    /// Bytes of event bodies a batch may hold; halved when a server answers 413.
    private var batchBytes = BuzzKitClient.maxBatchBytes
    /// What `setAttributes` sent this launch, and for whom (the fingerprint FlowPilot's page describes).
    private var sentAttributes: [String: JSONValue] = [:]
    private var sentAttributesSubscriber: String?

    // Sessions.
    private var sessionOpen = false
    private var backgroundSince: Date?
    private var sessionStartedAt: Date?
    private var lifecycleGeneration = 0
    private var observers: [any NSObjectProtocol] = []

    static let stateKey = "identity.json"
    static let maxBatchBytes = 512 * 1024

    /// A client on its own storage. Several in one process are several devices.
    /// - Parameters:
    ///   - clientKey: the tenant's `bk_client_…` key.
    ///   - baseURL: the server, e.g. `https://push.example.com`.
    ///   - storageDirectory: where the queue and identity live; Application Support/BuzzKit by default.
    ///   - configuration: platform, limits, retry policy, durability.
    public convenience init(
        clientKey: String, baseURL: URL, storageDirectory: URL? = nil, configuration: Configuration = Configuration()
    ) {
        let directory = storageDirectory ?? BuzzKitClient.defaultStorageDirectory()
        do {
            try self.init(
                clientKey: clientKey, baseURL: baseURL, storageDirectory: directory, configuration: configuration,
                transport: URLSessionTransport(baseURL: baseURL, timeout: configuration.requestTimeout),
                clock: SystemWallClock(), jitter: SystemJitter(), startsDelivery: true)
        } catch {
            // The queue must live somewhere: a temporary folder still survives the app being killed.
            configuration.log("storage at \(directory.path) unusable (\(error)); using a temporary directory")
            let fallback = FileManager.default.temporaryDirectory.appendingPathComponent("BuzzKit-\(UUID().uuidString)")
            try! self.init(
                clientKey: clientKey, baseURL: baseURL, storageDirectory: fallback, configuration: configuration,
                transport: URLSessionTransport(baseURL: baseURL, timeout: configuration.requestTimeout),
                clock: SystemWallClock(), jitter: SystemJitter(), startsDelivery: true)
        }
    }

    /// The full initializer: tests pass a fake transport, a manual clock and no delivery thread.
    init(
        clientKey: String, baseURL: URL, storageDirectory: URL, configuration: Configuration,
        transport: any Transport, clock: any WallClock, jitter: any JitterSource, startsDelivery: Bool
    ) throws {
        self.clientKey = clientKey
        self.baseURL = baseURL
        self.storageDirectory = storageDirectory
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.jitter = jitter
        try FileManager.default.createDirectory(at: storageDirectory, withIntermediateDirectories: true)
        storageLock = try StorageLock(directory: storageDirectory)
        store = configuration.credentialStore ?? FileCredentialStore(directory: storageDirectory)
        device = configuration.device ?? DeviceContext.current(platform: configuration.platform)
        outbox = try Outbox(
            url: storageDirectory.appendingPathComponent("queue.log"), maxEvents: configuration.maxQueuedEvents)

        var loaded = try store.load(BuzzKitClient.stateKey).flatMap {
            try? JSONDecoder().decode(DeviceState.self, from: $0)
        }
        // The log is written before the state file: if they disagree, the log's identity is the newer one.
        if let latest = outbox.epochs[outbox.currentEpoch], var current = loaded,
            latest.anonymousId != current.anonymousId || latest.externalId != current.externalId
        {
            if latest.anonymousId != current.anonymousId { current.previousAnonymousIds.append(current.anonymousId) }
            current.anonymousId = latest.anonymousId
            current.externalId = latest.externalId
            current.identityHash = latest.identityHash
            current.identityToken = latest.identityToken
            current.identifyFingerprint = nil
            loaded = current
        }
        delivery = startsDelivery ? DeliveryThread() : nil
        let fresh = loaded == nil
        state =
            loaded
            ?? DeviceState(deviceId: SecureRandom.token(21), anonymousId: SecureRandom.anonymousID(), externalId: nil)
        if outbox.epochs[outbox.currentEpoch] == nil || fresh {
            // First launch (or a lost log): the anonymous identity is the first thing in the queue.
            let record = outbox.newEpoch(BuzzKitClient.stamp(of: state))
            try outbox.sync(through: outbox.append([record]))
        }
        try saveState()

        if let delivery {
            delivery.start { [weak self] in self?.deliverOnce() }
            startSyncTimer()
            observeLifecycle()
        }
    }

    /// Stops sending and releases the storage folder for another client (tests relaunch on it).
    func close() {
        delivery?.stop()
        storageLock.release()
    }

    deinit {
        storageLock.release()
        delivery?.stop()
        syncTimer?.cancel()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }

    static func defaultStorageDirectory() -> URL {
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("BuzzKit", isDirectory: true)
    }

    // MARK: - Identity

    /// The anonymous id of this device: minted on first launch, a new one at every logout.
    public var anonymousId: String { locked { state.anonymousId } }

    /// The external id passed to the last identify; nil while anonymous.
    public var externalId: String? { locked { state.externalId } }

    /// This install's device id (the push subscription's `deviceId`).
    public var deviceId: String { locked { state.deviceId } }

    /// Ties this device to your user `externalId`, proven with `identityHash` (HMAC-SHA256 of the id
    /// under the tenant's identity secret, from your backend). On the first identify after the
    /// device was anonymous the anonymous id is sent too and the server merges it. Repeating it
    /// with nothing new sends nothing.
    public func identify(
        _ externalId: String, email: String? = nil, identityHash: String? = nil,
        attributes: [String: JSONValue]? = nil, subscribe: [Channel: Bool] = [:]
    ) {
        identify(externalId, email: email, hash: identityHash, token: nil, attributes: attributes, subscribe: subscribe)
    }

    /// The same, proven with an HS256 JWT from your backend instead of a hash.
    public func identify(
        _ externalId: String, identityToken: String, email: String? = nil, attributes: [String: JSONValue]? = nil,
        subscribe: [Channel: Bool] = [:]
    ) {
        identify(
            externalId, email: email, hash: nil, token: identityToken, attributes: attributes, subscribe: subscribe)
    }

    private func identify(
        _ externalId: String, email: String?, hash: String?, token: String?, attributes: [String: JSONValue]?,
        subscribe: [Channel: Bool]
    ) {
        if let problem = IDRules.externalIdProblem(externalId) {
            configuration.log("identify ignored: \(problem); the identity stays as it was")
            return
        }
        var fields: [String: JSONValue] = [
            "externalId": .string(externalId), "device": device.json(deviceId: deviceId),
        ]
        if let email {
            if IDRules.looksLikeEmail(email) {
                fields["email"] = .string(email)
            } else {
                configuration.log("identify: email is not an address; sent without it")
            }
        }
        if let token {
            fields["identityToken"] = .string(token)
        } else if let hash {
            fields["identityHash"] = .string(hash)
        }
        if let attributes = sanitized(attributes ?? [:], call: "identify"), !attributes.isEmpty {
            fields["attributes"] = .object(attributes)
        }
        if !subscribe.isEmpty {
            fields["subscribe"] = .object(
                Dictionary(uniqueKeysWithValues: subscribe.map { ($0.key.rawValue, .bool($0.value)) }))
        }
        let fingerprint = JSONValue.object(fields).jsonText

        enqueue { state in
            if state.externalId == externalId && state.identifyFingerprint == fingerprint { return nil }
            if state.externalId == nil { fields["anonymousId"] = .string(state.anonymousId) }
            let changed = state.externalId != externalId
            state.externalId = externalId
            state.identityHash = token == nil ? hash : nil
            state.identityToken = token
            state.identifyFingerprint = fingerprint
            var records: [Record] = []
            let identity = BuzzKitClient.stamp(of: state)
            if outbox.epochs[outbox.currentEpoch] != identity { records.append(outbox.newEpoch(identity)) }
            records.append(operation(.identify, JSONValue.object(fields).jsonText))
            // A new person on this device: the push subscription follows (the last login wins).
            if changed, let pushToken = state.pushToken {
                records.append(operation(.pushRegister, pushBody(pushToken, state.permission)))
            }
            return records
        }
    }

    /// Signs out: deletes this device's push subscription for the user signing out, forgets the
    /// external id and its proof, mints a new anonymous id (never an earlier one), and registers
    /// the push token under it. Everything queued before is still sent as the previous user.
    public func logout() {
        enqueue { state in
            var records: [Record] = []
            if state.pushToken != nil { records.append(operation(.pushDelete, "")) }
            state.previousAnonymousIds.append(state.anonymousId)
            var fresh = SecureRandom.anonymousID()
            while state.previousAnonymousIds.contains(fresh) { fresh = SecureRandom.anonymousID() }
            state.anonymousId = fresh
            state.externalId = nil
            state.identityHash = nil
            state.identityToken = nil
            state.identifyFingerprint = nil
            records.append(outbox.newEpoch(BuzzKitClient.stamp(of: state)))
            if let pushToken = state.pushToken {
                records.append(operation(.pushRegister, pushBody(pushToken, state.permission)))
            }
            return records
        }
    }

    // MARK: - Calls on the current subscriber

    /// Merges `attributes` into the subscriber's (the server never replaces the map). `$` keys
    /// are the server's and are left out.
    /// The same values again for the same subscriber, within a launch, send nothing (so a call
    /// from a view body costs one request, not one per frame).
    public func setAttributes(_ attributes: [String: JSONValue]) {
        guard let clean = sanitized(attributes, call: "setAttributes"), !clean.isEmpty else { return }
        let body = JSONValue.object(["attributes": .object(clean)]).jsonText
        enqueue { state in
            let subscriber = state.externalId ?? state.anonymousId
            if sentAttributesSubscriber != subscriber {
                sentAttributesSubscriber = subscriber
                sentAttributes = [:]
            }
            if clean.allSatisfy({ sentAttributes[$0.key] == $0.value }) { return nil }
            sentAttributes.merge(clean) { _, new in new }
            return [operation(.attributes, body)]
        }
    }

    /// Records an event. Costs one append to the queue's file; sent in batches of up to 500.
    public func track(_ name: String, properties: [String: JSONValue]? = nil) {
        track(name, properties: properties, at: nil)
    }

    func track(_ name: String, properties: [String: JSONValue]?, at date: Date?) {
        guard IDRules.isValidEventName(name) else {
            configuration.log("track ignored: event name \"\(name.prefix(40))\" is empty, too long or reserved")
            return
        }
        enqueue { state in
            let millis = Int64(((date ?? clock.now()).timeIntervalSince1970 * 1000).rounded(.down))
            var body = "{\"id\":\"e_"
            body += state.deviceId
            body += "_"
            body += String(outbox.nextSeq)
            body += "\",\"name\":"
            JSONValue.appendString(name, to: &body)
            body += ",\"timestamp\":\""
            body += Timestamp.rfc3339(millis: millis)
            body += "\""
            if let properties, !properties.isEmpty {
                body += ",\"properties\":"
                JSONValue.appendObject(properties, to: &body)
            }
            body += "}"
            guard body.utf8.count <= BuzzKitClient.maxBatchBytes else {
                configuration.log("track ignored: event \"\(name.prefix(40))\" is larger than 512 KiB")
                return nil
            }
            return [outbox.operation(.event, body: Array(body.utf8), createdAt: millis)]
        }
    }

    /// Registers this device's push token (and the OS notification permission, kept as
    /// `$notificationPermission`) under the current subscriber. The same token and permission again
    /// send nothing.
    public func setPushToken(_ token: String, permission: NotificationPermission? = nil) {
        enqueue { state in
            let permissionValue = permission?.rawValue ?? state.permission
            if state.pushToken == token && state.permission == permissionValue { return nil }
            state.pushToken = token
            state.permission = permissionValue
            return [operation(.pushRegister, pushBody(token, permissionValue))]
        }
    }

    /// The notification permission changed (the app reports it, e.g. on launch and after the
    /// system prompt): refreshed through the push registration.
    public func setNotificationPermission(_ permission: NotificationPermission) {
        enqueue { state in
            guard state.permission != permission.rawValue else { return nil }
            state.permission = permission.rawValue
            guard let token = state.pushToken else { return [] }
            return [operation(.pushRegister, pushBody(token, permission.rawValue))]
        }
    }

    /// Topic choices (`["news": false]`), each stamped by the server with its time.
    public func setPreferences(_ topics: [String: Bool]) {
        guard !topics.isEmpty else { return }
        // The server takes at most 100 topics a call.
        let keys = topics.keys.sorted()
        let bodies = stride(from: 0, to: keys.count, by: 100).map { start in
            let chunk = keys[start..<min(start + 100, keys.count)]
            let object = Dictionary(uniqueKeysWithValues: chunk.map { ($0, JSONValue.bool(topics[$0]!)) })
            return JSONValue.object(["topics": .object(object)]).jsonText
        }
        enqueue { _ in bodies.map { operation(.preferences, $0) } }
    }

    // MARK: - Sessions

    /// The app became active: starts a session (`$session.start`) unless one is still open. Called
    /// from UIKit's notifications where they exist; call it yourself elsewhere.
    public func applicationDidBecomeActive() {
        let now = clock.now()
        let (end, start): (Date?, Bool) = locked {
            lifecycleGeneration += 1
            var end: Date? = nil
            if sessionOpen, let since = backgroundSince, now.timeIntervalSince(since) >= configuration.sessionTimeout {
                // The timer did not fire (the app was suspended): the session ended when it left.
                end = since
                sessionOpen = false
            }
            backgroundSince = nil
            let start = !sessionOpen
            if start {
                sessionOpen = true
            }
            return (end, start)
        }
        if let end { endSession(at: end) }
        if start {
            locked { sessionStartedAt = now }
            track("$session.start", properties: nil, at: now)
        }
    }

    /// The app went to the background: the session ends after `sessionTimeout` there.
    public func applicationDidEnterBackground() {
        let now = clock.now()
        let generation: Int = locked {
            lifecycleGeneration += 1
            backgroundSince = now
            return lifecycleGeneration
        }
        guard delivery != nil else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.sessionTimeout) { [weak self] in
            self?.sessionTimerFired(generation: generation)
        }
    }

    /// Ends the session if the app is still in the background since `generation`.
    func sessionTimerFired(generation: Int) {
        let end: Date? = locked {
            guard generation == lifecycleGeneration, sessionOpen, let since = backgroundSince else { return nil }
            sessionOpen = false
            return since
        }
        if let end { endSession(at: end) }
    }

    private func endSession(at end: Date) {
        let started = locked { sessionStartedAt }
        var properties: [String: JSONValue] = [:]
        if let started { properties["durationSeconds"] = .number(max(end.timeIntervalSince(started), 0).rounded()) }
        track("$session.end", properties: properties, at: end)
    }

    private func observeLifecycle() {
        #if canImport(UIKit)
            // The notifications' raw names: `UIApplication`'s constants are main-actor isolated.
            let center = NotificationCenter.default
            observers.append(
                center.addObserver(
                    forName: Notification.Name("UIApplicationDidBecomeActiveNotification"), object: nil, queue: nil
                ) { [weak self] _ in self?.applicationDidBecomeActive() })
            observers.append(
                center.addObserver(
                    forName: Notification.Name("UIApplicationDidEnterBackgroundNotification"), object: nil, queue: nil
                ) { [weak self] _ in self?.applicationDidEnterBackground() })
        #endif
    }

    // MARK: - Flushing

    /// Waits until everything queued so far is sent (or given up); true when the queue is empty.
    /// A flush also cuts short a backoff wait (not a server's `Retry-After`).
    public func flush(timeout: Duration = .seconds(10)) async -> Bool {
        locked {
            if !notBeforeIsServers { notBefore = nil }
        }
        try? outbox.sync()
        delivery?.kick()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if isDrained { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return isDrained
    }

    /// True when nothing is left to send.
    public var isDrained: Bool { locked { !outbox.hasWork() } }

    /// The queue's counters.
    public var queueStatus: QueueStatus {
        locked {
            QueueStatus(
                pending: outbox.pendingCount, queuedEvents: outbox.queuedEvents, droppedEvents: outbox.droppedEvents,
                rejectedOperations: rejected)
        }
    }

    // MARK: - Queueing

    /// Runs `make` under the lock with the device state; the records it returns are appended
    /// durably before this returns, then the state is saved if it changed.
    private func enqueue(_ make: (inout DeviceState) -> [Record]?) {
        lock.lock()
        var next = state
        guard let records = make(&next) else {
            lock.unlock()
            return
        }
        var position: UInt64? = nil
        do {
            position = try outbox.append(records)
            if next != state {
                state = next
                try saveState()
            }
        } catch {
            configuration.log("could not queue: \(error)")
        }
        lock.unlock()
        // The flush happens outside the lock: callers on other threads append meanwhile and share
        // the next one (group commit), and the delivery thread is not held up.
        if let position, configuration.durability == .synchronous {
            do {
                try outbox.sync(through: position)
            } catch {
                configuration.log("could not sync the queue: \(error)")
            }
        }
        delivery?.kick()
    }

    private func operation(_ kind: RecordKind, _ body: String) -> Record {
        outbox.operation(kind, body: Array(body.utf8), createdAt: Int64(clock.now().timeIntervalSince1970 * 1000))
    }

    private static func stamp(of state: DeviceState) -> IdentityStamp {
        IdentityStamp(
            anonymousId: state.anonymousId, externalId: state.externalId, identityHash: state.identityHash,
            identityToken: state.identityToken)
    }

    private func saveState() throws {
        try store.save(try JSONEncoder().encode(state), for: BuzzKitClient.stateKey)
    }

    private func pushBody(_ token: String, _ permission: String?) -> String {
        var object: [String: JSONValue] = [
            "token": .string(token), "platform": .string(device.platform.rawValue),
            "device": device.json(deviceId: state.deviceId),
        ]
        if let permission { object["permission"] = .string(permission) }
        return JSONValue.object(object).jsonText
    }

    /// `$` keys are the server's: sending one would make the server refuse the whole call.
    private func sanitized(_ attributes: [String: JSONValue], call: String) -> [String: JSONValue]? {
        let reserved = attributes.keys.filter { $0.hasPrefix("$") || $0.isEmpty }
        if !reserved.isEmpty {
            configuration.log("\(call): left out reserved or empty keys \(reserved.sorted())")
        }
        return attributes.filter { !$0.key.hasPrefix("$") && !$0.key.isEmpty }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func startSyncTimer() {
        guard case .grouped(let interval) = configuration.durability else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in
            // Without the client's lock: the log syncs safely on its own, and track() must not
            // wait behind a disk flush.
            try? self?.outbox.sync()
        }
        timer.resume()
        syncTimer = timer
    }

    // MARK: - Delivering

    /// Sends the head of the queue once, if it is due, and applies the retry policy to the answer.
    func deliverOnce() -> DeliveryStep {
        lock.lock()
        guard outbox.hasWork() else {
            lock.unlock()
            return .idle
        }
        // The wait comes first: while offline every call kicks this thread, and it should cost nothing.
        if let notBefore, notBefore > clock.now() {
            lock.unlock()
            return .waiting(until: notBefore)
        }
        let next: Batch?
        do {
            next = try outbox.nextBatch(maxEvents: configuration.maxBatchSize, maxBytes: batchBytes)
        } catch {
            lock.unlock()
            configuration.log("could not read the queue: \(error)")
            return .waiting(until: clock.now().addingTimeInterval(1))
        }
        guard let batch = next else {
            lock.unlock()
            return .idle
        }
        if !batch.ahead { outbox.freeze(through: batch.lastSeq) }
        let request = makeRequest(batch)
        lock.unlock()

        let result = transport.send(request)

        lock.lock()
        defer { lock.unlock() }
        let now = clock.now()
        var outcome = DeliveryOutcome.unreachable
        if case .response(let status, let retryAfter, let body) = result {
            let code = BuzzKitClient.errorCode(body)
            if batch.kind == .identify, status == 400, code == "invalid_attributes" || code == "invalid_email",
                identifyOverrides[batch.firstSeq] == nil
            {
                // The merge matters more than the optional field that broke it: send it without.
                configuration.log("identify refused (\(code!)); sending it again without attributes and email")
                identifyOverrides[batch.firstSeq] = BuzzKitClient.strip(
                    ["attributes", "email"], from: request.body ?? [])
                return .again
            }
            if batch.kind == .event, status == 413, batch.records.count > 1 {
                // A server with a smaller body limit: split the batch rather than lose it.
                batchBytes = max((request.body?.count ?? 0) / 2, 1024)
                outbox.freeze(through: nil)
                configuration.log("events refused as too large; batches now at most \(batchBytes) bytes")
                return .again
            }
            // An answer that says "the first try is still running" is a wait, not a refusal.
            let effective = status == 409 && code == "idempotency_key_in_progress" ? 503 : status
            outcome = .answered(status: effective, retryAfter: RetryPolicy.parseRetryAfter(retryAfter, now: now))
        }
        failures += 1
        if case .answered(let status, _) = outcome, !(200..<300).contains(status) { answeredFailures += 1 }
        let age = now.timeIntervalSince1970 - Double(batch.records[0].createdAt) / 1000
        let decision = configuration.retry.decide(
            outcome, failures: failures, answeredFailures: answeredFailures, age: age,
            exempt: batch.kind == .identify || batch.kind == .pushDelete, jitter: jitter.unit())
        switch decision {
        case .done, .drop:
            if case .drop(let reason) = decision {
                let detail = result.errorDescription
                configuration.log("dropped \(batch.kind) ×\(batch.records.count) (\(reason)) \(detail)")
                rejected += batch.records.count
            }
            do {
                if batch.ahead {
                    try outbox.completeAhead(batch, merged: decision == .done && BuzzKitClient.merged(result))
                } else {
                    try outbox.complete(through: batch.lastSeq)
                }
            } catch {
                configuration.log("could not record delivery: \(error)")
                return .waiting(until: now.addingTimeInterval(1))
            }
            identifyOverrides[batch.firstSeq] = nil
            failures = 0
            answeredFailures = 0
            notBefore = nil
            notBeforeIsServers = false
            if case .done = decision { return .sent(count: batch.records.count) }
            return .dropped(count: batch.records.count)
        case .retry(let delay):
            notBefore = now.addingTimeInterval(delay)
            if case .answered(_, let after?) = outcome, after > 0 {
                notBeforeIsServers = true
            } else {
                notBeforeIsServers = false
            }
            return .waiting(until: notBefore!)
        }
    }

    func makeRequest(_ batch: Batch) -> OutgoingRequest {
        let identity = batch.identity
        let subscriber = BuzzKitClient.pathComponent(identity.subscriberId)
        var headers = [
            "Authorization": "Bearer \(clientKey)",
            // A rewritten identify is another request: the server would answer a reused key with 422.
            "Idempotency-Key": "bk-\(state.deviceId)-\(batch.firstSeq)-\(batch.lastSeq)"
                + (identifyOverrides[batch.firstSeq] == nil ? "" : "-r"),
        ]
        if batch.kind != .identify {
            if let token = identity.identityToken {
                headers["BuzzKit-Identity-Token"] = token
            } else if let hash = identity.identityHash {
                headers["BuzzKit-Identity-Hash"] = hash
            }
        }
        let record = batch.records[0]
        var method: String
        var path: String
        var body: [UInt8]? = record.body
        switch batch.kind {
        case .identify:
            method = "POST"
            path = "/v1/identify"
            body = identifyOverrides[record.seq] ?? record.body
        case .attributes:
            method = "PATCH"
            path = "/v1/subscribers/\(subscriber)/attributes"
        case .event:
            method = "POST"
            path = "/v1/events"
            var bytes = Array("{\"subscriberId\":".utf8)
            var id = ""
            JSONValue.appendString(identity.subscriberId, to: &id)
            bytes += Array(id.utf8)
            bytes += Array(",\"events\":[".utf8)
            for (index, event) in batch.records.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += event.body
            }
            bytes += Array("]}".utf8)
            body = bytes
        case .pushRegister:
            method = "PUT"
            path = "/v1/subscribers/\(subscriber)/push-subscriptions/\(BuzzKitClient.pathComponent(state.deviceId))"
        case .pushDelete:
            method = "DELETE"
            path = "/v1/subscribers/\(subscriber)/push-subscriptions/\(BuzzKitClient.pathComponent(state.deviceId))"
            body = nil
        case .preferences:
            method = "PUT"
            path = "/v1/subscribers/\(subscriber)/preferences"
        case .epoch, .ack, .dropEvents, .done:
            method = "GET"
            path = "/healthz"
            body = nil
        }
        if body != nil { headers["Content-Type"] = "application/json" }
        return OutgoingRequest(method: method, path: path, headers: headers, body: body)
    }

    private static let pathAllowed: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~")
        return set
    }()

    /// An id as one path segment: everything but unreserved characters percent-encoded.
    static func pathComponent(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: pathAllowed) ?? id
    }

    /// `error.code` of an error envelope.
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return (object["error"] as? [String: Any])?["code"] as? String
    }

    /// Whether an identify's answer says the anonymous id was merged (`merge.shape` other than
    /// `none`; `none` comes with `merge_source_identified`: the id belongs to someone else).
    static func merged(_ result: TransportResult) -> Bool {
        guard case .response(_, _, let body) = result,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let merge = (object["data"] as? [String: Any])?["merge"] as? [String: Any]
        else { return false }
        return (merge["shape"] as? String).map { $0 != "none" } ?? false
    }

    static func strip(_ keys: [String], from body: [UInt8]) -> [UInt8] {
        guard var object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return body }
        for key in keys { object[key] = nil }
        return (try? JSONSerialization.data(withJSONObject: object)).map { [UInt8]($0) } ?? body
    }
}

extension TransportResult {
    /// The status and error code, for the log line of a dropped operation.
    var errorDescription: String {
        switch self {
        case .response(let status, _, let body):
            return "status \(status) \(BuzzKitClient.errorCode(body) ?? "")"
        case .failure(let reason):
            return reason
        }
    }
}
