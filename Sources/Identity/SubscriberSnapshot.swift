/// Everything the API shows of one subscriber (API.md §4), read in one transaction.
package struct SubscriberSnapshot: Sendable {
    package var record: SubscriberRecord
    package var attributes: [(name: String, entry: AttributeEntry)]
    package var aliases: [String]
    package var pushSubscriptions: [PushSubscriptionRecord]
    package var preferences: [PreferenceRecord]
    package var devices: [DeviceRecord]

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
}
