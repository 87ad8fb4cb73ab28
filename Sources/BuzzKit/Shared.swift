import Foundation

// The calls of API.md §16 as module-level functions over one shared client, so an app writes
// `BuzzKit.identify(…)` (the module's name qualifies them) without a type named like the module.

/// Holds the client `configure` made.
private final class SharedClient: @unchecked Sendable {
    private let lock = NSLock()
    private var client: BuzzKitClient?

    var current: BuzzKitClient? {
        lock.lock()
        defer { lock.unlock() }
        return client
    }

    /// Makes the client once: a second client on the same files would interleave its appends
    /// with the first one's.
    func setOnce(_ make: () -> BuzzKitClient) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard client == nil else { return false }
        client = make()
        return true
    }
}

private let shared = SharedClient()

/// The client `configure` made; nil before.
public var sharedClient: BuzzKitClient? { shared.current }

private func withShared(_ call: String, _ body: (BuzzKitClient) -> Void) {
    guard let client = shared.current else {
        FileHandle.standardError.write(Data("[BuzzKit] \(call) before BuzzKit.configure(…): ignored\n".utf8))
        return
    }
    body(client)
}

/// Sets up the shared client; call once at launch, before any other call (later calls are ignored).
/// - Parameters:
///   - clientKey: the tenant's `bk_client_…` key (public: it ships in the app).
///   - baseURL: the server.
///   - storageDirectory: where the queue and the identity live; Application Support/BuzzKit by default.
///   - configuration: platform, limits, retry policy, durability.
public func configure(
    clientKey: String, baseURL: URL, storageDirectory: URL? = nil, configuration: Configuration = Configuration()
) {
    let made = shared.setOnce {
        BuzzKitClient(
            clientKey: clientKey, baseURL: baseURL, storageDirectory: storageDirectory, configuration: configuration)
    }
    if !made { configuration.log("BuzzKit.configure called again: the first configuration stays") }
}

/// `BuzzKitClient.identify(_:email:identityHash:attributes:subscribe:)` on the shared client.
public func identify(
    _ externalId: String, email: String? = nil, identityHash: String? = nil, attributes: [String: JSONValue]? = nil,
    subscribe: [Channel: Bool] = [:]
) {
    withShared("identify") {
        $0.identify(externalId, email: email, identityHash: identityHash, attributes: attributes, subscribe: subscribe)
    }
}

/// `BuzzKitClient.identify(_:identityToken:email:attributes:subscribe:)` on the shared client.
public func identify(
    _ externalId: String, identityToken: String, email: String? = nil, attributes: [String: JSONValue]? = nil,
    subscribe: [Channel: Bool] = [:]
) {
    withShared("identify") {
        $0.identify(
            externalId, identityToken: identityToken, email: email, attributes: attributes, subscribe: subscribe)
    }
}

/// `BuzzKitClient.setAttributes(_:)` on the shared client.
public func setAttributes(_ attributes: [String: JSONValue]) {
    withShared("setAttributes") { $0.setAttributes(attributes) }
}

/// `BuzzKitClient.track(_:properties:)` on the shared client.
public func track(_ name: String, properties: [String: JSONValue]? = nil) {
    withShared("track") { $0.track(name, properties: properties) }
}

/// `BuzzKitClient.setPushToken(_:permission:)` on the shared client.
public func setPushToken(_ token: String, permission: NotificationPermission? = nil) {
    withShared("setPushToken") { $0.setPushToken(token, permission: permission) }
}

/// `BuzzKitClient.setNotificationPermission(_:)` on the shared client.
public func setNotificationPermission(_ permission: NotificationPermission) {
    withShared("setNotificationPermission") { $0.setNotificationPermission(permission) }
}

/// `BuzzKitClient.setPreferences(_:)` on the shared client.
public func setPreferences(_ topics: [String: Bool]) {
    withShared("setPreferences") { $0.setPreferences(topics) }
}

/// `BuzzKitClient.logout()` on the shared client.
public func logout() {
    withShared("logout") { $0.logout() }
}

/// `BuzzKitClient.applicationDidBecomeActive()` on the shared client (automatic under UIKit).
public func applicationDidBecomeActive() {
    withShared("applicationDidBecomeActive") { $0.applicationDidBecomeActive() }
}

/// `BuzzKitClient.applicationDidEnterBackground()` on the shared client (automatic under UIKit).
public func applicationDidEnterBackground() {
    withShared("applicationDidEnterBackground") { $0.applicationDidEnterBackground() }
}

/// The shared client's anonymous id; empty before `configure`.
public var anonymousId: String { shared.current?.anonymousId ?? "" }

/// The shared client's external id; nil until identify (and before `configure`).
public var externalId: String? { shared.current?.externalId }

/// `BuzzKitClient.flush(timeout:)` on the shared client; false before `configure`.
public func flush(timeout: Duration = .seconds(10)) async -> Bool {
    guard let client = shared.current else { return false }
    return await client.flush(timeout: timeout)
}
