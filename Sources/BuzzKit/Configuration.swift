import Foundation

/// How often the queue's appends reach the disk.
public enum Durability: Sendable, Equatable {
    /// `fsync` before each call returns: nothing acknowledged to the caller is lost, even on power
    /// loss. Costs one disk flush per call (milliseconds on most disks).
    case synchronous
    /// `write` before each call returns (survives the app being killed), `fsync` from the
    /// background at most `interval` later (a power cut may lose that window).
    case grouped(interval: TimeInterval)
}

/// Channels the server can subscribe an identified person to.
public enum Channel: String, Sendable, Hashable {
    case email
}

/// The OS notification permission, kept as `$notificationPermission` on the subscriber.
public enum NotificationPermission: String, Sendable {
    case authorized, denied, provisional, ephemeral, notDetermined
}

/// Settings of a client; the defaults suit an app.
public struct Configuration: Sendable {
    /// The platform sent with push registrations and device context.
    public var platform: Platform = .current
    /// Device context override; `nil` reads it from the process (`DeviceContext.current`).
    public var device: DeviceContext? = nil
    /// Background time after which the session ends (`$session.end`).
    public var sessionTimeout: TimeInterval = 30
    /// Most events kept queued; past it the oldest events are dropped (identity calls never).
    public var maxQueuedEvents: Int = 50_000
    /// Events sent in one `POST /v1/events` (the server takes at most 500).
    public var maxBatchSize: Int = 500
    /// Retry schedule for answers that may succeed later.
    public var retry: RetryPolicy = RetryPolicy()
    /// When the queue's appends are flushed to disk.
    public var durability: Durability = .synchronous
    /// Time one HTTP request may take.
    public var requestTimeout: TimeInterval = 30
    /// Where the identity is kept; files in the storage directory when nil.
    public var credentialStore: (any CredentialStore)? = nil
    /// Where warnings go (dropped operations, rejected calls); standard error by default.
    public var log: @Sendable (String) -> Void = { message in
        FileHandle.standardError.write(Data(("[BuzzKit] " + message + "\n").utf8))
    }

    public init() {}
}
