/// The answer kept for an `Idempotency-Key` (API.md §13).
package struct IdempotencyRecord: Sendable, Equatable {
    /// The API key id and the tenant it acted in: a key is never seen by another caller.
    package var scope: String
    package var key: String
    package var method: String
    /// The request target, query included.
    package var path: String
    package var bodySHA256: [UInt8]
    package var status: Int
    package var contentType: String
    /// The response body exactly as first sent.
    package var response: [UInt8]
    package var createdAt: Timestamp

    package init(
        scope: String, key: String, method: String, path: String, bodySHA256: [UInt8], status: Int,
        contentType: String, response: [UInt8], createdAt: Timestamp
    ) {
        self.scope = scope
        self.key = key
        self.method = method
        self.path = path
        self.bodySHA256 = bodySHA256
        self.status = status
        self.contentType = contentType
        self.response = response
        self.createdAt = createdAt
    }

    /// Whether a retry asks the same thing (same method, target and body).
    package func matches(method: String, path: String, bodySHA256: [UInt8]) -> Bool {
        self.method == method && self.path == path && self.bodySHA256 == bodySHA256
    }
}

/// Reading kept answers.
package protocol IdempotencyReadContext {
    func idempotencyRecord(scope: String, key: String) throws -> IdempotencyRecord?
    /// Whether any record was created before `cutoff`: the purge reads this before it writes.
    func idempotencyRecordsExist(createdBefore cutoff: Timestamp) throws -> Bool
}

/// Keeping answers, inside the write transaction of the request's effect.
package protocol IdempotencyWriteContext: IdempotencyReadContext {
    /// Stores the record; a record already there for (scope, key) is a constraint error.
    func insertIdempotencyRecord(_ record: IdempotencyRecord) throws
    /// Deletes at most `limit` records created before `cutoff`; returns how many went.
    func purgeIdempotencyRecords(createdBefore cutoff: Timestamp, limit: Int) throws -> Int
}
