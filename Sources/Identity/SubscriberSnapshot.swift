import Synchronization

/// Everything the API shows of one subscriber (API.md §4), read in one transaction.
///
/// Immutable, so what was rendered of it once (`rendered`) stays true: a cached snapshot served
/// many times is turned into JSON once. An object, so handing a cached one from the cache through
/// the read's callbacks to the renderer is a retain, not a copy of every field (~10 retains).
package final class SubscriberSnapshot: Sendable {
    /// The API's JSON of this snapshot, made by the first request that shows it (`rendered`).
    /// First, so it shares the object's first cache line with the reference count: a cached GET
    /// of one of many people reads these two and the record's id, and each line it reaches is
    /// a miss to memory.
    private let renderedBytes = Mutex<[UInt8]?>(nil)
    package let record: SubscriberRecord
    package let attributes: [(name: String, entry: AttributeEntry)]
    package let aliases: [String]
    package let pushSubscriptions: [PushSubscriptionRecord]
    package let preferences: [PreferenceRecord]
    package let devices: [DeviceRecord]

    package init(
        record: SubscriberRecord, attributes: [(name: String, entry: AttributeEntry)], aliases: [String],
        pushSubscriptions: [PushSubscriptionRecord], preferences: [PreferenceRecord], devices: [DeviceRecord]
    ) {
        self.record = record
        self.attributes = attributes
        self.aliases = aliases
        self.pushSubscriptions = pushSubscriptions
        self.preferences = preferences
        self.devices = devices
    }

    /// Loads the parts of `record` from the same context that produced it.
    package static func load(_ record: SubscriberRecord, from ctx: any IdentityReadContext) throws -> SubscriberSnapshot
    {
        SubscriberSnapshot(
            record: record,
            attributes: try ctx.attributes(key: record.key),
            aliases: try ctx.aliases(key: record.key, excluding: record.id),
            pushSubscriptions: try ctx.pushSubscriptions(key: record.key),
            preferences: try ctx.preferences(key: record.key),
            devices: try ctx.devices(key: record.key))
    }

    /// The rendering a request made and kept, if one did.
    package var keptRendering: [UInt8]? { renderedBytes.withLock { $0 } }

    /// The kept rendering, or `render()`'s, kept for the next request that shows this snapshot.
    package func rendered(_ render: () -> [UInt8]) -> [UInt8] {
        if let kept = renderedBytes.withLock({ $0 }) { return kept }
        let made = render()
        renderedBytes.withLock { $0 = made }
        return made
    }
}
