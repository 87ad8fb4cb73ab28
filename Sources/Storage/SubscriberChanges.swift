/// The keys of subscribers the writer's connection changed since the last `take()`, filled by
/// temp triggers through an SQL function. Only the writer thread touches it.
final class SubscriberChanges: @unchecked Sendable {
    private var keys: Set<Int64> = []

    static let functionName = "buzzkit_subscriber_changed"

    /// Temp triggers live on the writer's connection only and are never part of the schema:
    /// every table a snapshot is read from reports the subscriber it belongs to. An update
    /// reports the old owner too only when the row moved to another subscriber (most updates
    /// keep it: every identify's UPDATE of its subscriber, a call into Swift saved).
    static let triggersSQL: String = {
        let tables = [
            ("subscribers", "key"), ("aliases", "subscriber_key"), ("attributes", "subscriber_key"),
            ("push_subscriptions", "subscriber_key"), ("preferences", "subscriber_key"), ("devices", "subscriber_key"),
        ]
        return tables.map { table, column in
            """
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_insert AFTER INSERT ON main.\(table)
                BEGIN SELECT \(functionName)(NEW.\(column)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_update AFTER UPDATE ON main.\(table)
                BEGIN
                    SELECT \(functionName)(NEW.\(column));
                    SELECT \(functionName)(OLD.\(column)) WHERE OLD.\(column) IS NOT NEW.\(column);
                END;
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_delete AFTER DELETE ON main.\(table)
                BEGIN SELECT \(functionName)(OLD.\(column)); END;
            """
        }.joined(separator: "\n")
    }()

    func record(_ key: Int64) { keys.insert(key) }

    func take() -> Set<Int64> {
        defer { keys.removeAll(keepingCapacity: true) }
        return keys
    }
}
