import Crypto
import HTTP1
import HTTPServer
import Identity
import JSON
import Synchronization

/// One request's `Idempotency-Key`, read and checked (API.md §13).
struct IdempotencyClaim: Sendable {
    /// API key id and tenant: a key is never visible to another caller.
    var scope: String
    var key: String
    var method: String
    /// The request target, query included.
    var path: String
    var bodySHA256: [UInt8]

    /// How long a client should wait before retrying a key still in flight.
    static let retryAfterSeconds = 1
    /// Longest key (API.md §13).
    static let maxLength = 255

    /// The claim of a mutating `/v1` request that sent the header; nil when it does not apply.
    /// - Throws: `400 invalid_request` for a malformed key (never kept).
    static func read(_ request: HTTPRequest, route: Route, key: APIKeyRecord?, tenantID: String?) throws(APIError)
        -> IdempotencyClaim?
    {
        guard route.takesIdempotencyKey, let key, let value = request.headers["Idempotency-Key"] else {
            return nil
        }
        // Visible ASCII only (0x21–0x7E), 1 to 255 of them.
        guard (1...maxLength).contains(value.utf8.count), value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidRequest("'Idempotency-Key' must be 1 to \(maxLength) visible ASCII characters.")
        }
        return IdempotencyClaim(
            scope: key.id + "/" + (tenantID ?? ""), key: value, method: request.method.rawValue,
            path: request.head.target, bodySHA256: Digest.sha256(request.body))
    }

    /// Answers that a retry may change are not kept: 401, 403, 408, 429 and every 5xx.
    static func keeps(_ status: HTTPStatus) -> Bool {
        ![401, 403, 408, 429].contains(status.code) && status.code < 500
    }

    func record(of response: HTTPResponse, now: Timestamp) -> IdempotencyRecord {
        IdempotencyRecord(
            scope: scope, key: key, method: method, path: path, bodySHA256: bodySHA256, status: response.status.code,
            contentType: response.headers["Content-Type"] ?? "application/json; charset=utf-8", response: response.body,
            createdAt: now)
    }

    /// The stored answer again, byte for byte, or `422` when the key was used for another request.
    func answer(from stored: IdempotencyRecord, requestID: String) -> HTTPResponse {
        guard stored.matches(method: method, path: path, bodySHA256: bodySHA256) else {
            return Envelope.failure(
                APIError(
                    .idempotencyKeyReused, message: "This Idempotency-Key was used for another method, path or body."),
                requestID: requestID)
        }
        var headers: HTTPHeaders = ["Content-Type": stored.contentType]
        headers.add(name: "X-Request-Id", value: requestID)
        headers.add(name: "Idempotent-Replayed", value: "true")
        return HTTPResponse(status: HTTPStatus(stored.status), headers: headers, body: stored.response)
    }
}

/// Keys whose first request is still running, on this server. Across servers the record's
/// primary key decides: the second transaction to claim a key finds the first's row.
final class IdempotencyInFlight: Sendable {
    private let running = Mutex<Set<String>>([])

    /// False when the same scope and key is already running.
    func begin(_ claim: IdempotencyClaim) -> Bool {
        running.withLock { $0.insert(claim.scope + "\u{0}" + claim.key).inserted }
    }

    func end(_ claim: IdempotencyClaim) {
        _ = running.withLock { $0.remove(claim.scope + "\u{0}" + claim.key) }
    }
}

/// What the write job of an idempotent request found or made.
private enum IdempotentAnswer: Sendable {
    case fresh(HTTPResponse)
    case stored(IdempotencyRecord)
}

extension Application {
    /// Runs a request that carries an `Idempotency-Key`: a stored answer is replayed; otherwise
    /// the handler runs and its answer is kept in the same write transaction as its effect.
    func respondIdempotently(
        _ claim: IdempotencyClaim, route: Route, context: RequestContext,
        finish: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        let requestID = context.requestID
        let routeName = route.name
        do {
            if let stored = try store.read({ try $0.idempotencyRecord(scope: claim.scope, key: claim.key) }) {
                return finish(claim.answer(from: stored, requestID: requestID))
            }
        } catch {
            return finish(failure(error, requestID: requestID, route: routeName))
        }
        guard idempotencyInFlight.begin(claim) else {
            var error = APIError(
                .idempotencyKeyInProgress,
                message: "A request with this Idempotency-Key is still running; retry shortly.")
            error.headers.add(name: "Retry-After", value: String(IdempotencyClaim.retryAfterSeconds))
            return finish(Envelope.failure(error, requestID: requestID))
        }
        let inFlight = idempotencyInFlight
        let done: @Sendable (HTTPResponse) -> Void = { response in
            inFlight.end(claim)
            finish(response)
        }
        let now = context.now
        let outcome: Outcome
        do {
            outcome = try route.handler(context)
        } catch {
            return keep(failure(error, requestID: requestID, route: routeName), claim, now: now, then: done)
        }
        switch outcome {
        case .reply(let reply):
            keep(success(reply, requestID: requestID), claim, now: now, then: done)
        case .snapshot(let tenantID, let id, let then):
            // A read: nothing to claim, but a key on it is answered the same way again.
            do {
                let reply = try then(.snapshot(store.snapshot(tenantID: tenantID, id: id)), context)
                keep(success(reply, requestID: requestID), claim, now: now, then: done)
            } catch {
                keep(failure(error, requestID: requestID, route: routeName), claim, now: now, then: done)
            }
        case .write(let job):
            store.write({ ctx -> IdempotentAnswer in
                // The row claim, inside the transaction: a concurrent server that kept its answer first wins.
                if let stored = try ctx.idempotencyRecord(scope: claim.scope, key: claim.key) {
                    return .stored(stored)
                }
                var reply = try job(ctx)
                // The kept bytes must be the whole answer, so the subscriber a write shows is read
                // here, inside its transaction, rather than from a reader after the commit.
                try reply.showSubscriber { try SubscriberSnapshot.load($0, from: ctx) }
                let response = self.success(reply, requestID: requestID)
                if IdempotencyClaim.keeps(response.status) {
                    try ctx.insertIdempotencyRecord(claim.record(of: response, now: now))
                }
                return .fresh(response)
            }) { [self] result in
                switch result {
                case .success(.fresh(let response)): done(response)
                case .success(.stored(let stored)): done(claim.answer(from: stored, requestID: requestID))
                case .failure(let error):
                    // Another server kept its answer for this key first (our insert hit its row):
                    // that answer is the one to give.
                    if let stored = try? store.read({ try $0.idempotencyRecord(scope: claim.scope, key: claim.key) }) {
                        return done(claim.answer(from: stored, requestID: requestID))
                    }
                    // The effect rolled back; a refusal (4xx) is still an answer worth keeping.
                    keep(failure(error, requestID: requestID, route: routeName), claim, now: now, then: done)
                }
            }
        }
    }

    /// Stores an answer that had no effect to commit with (a refusal, a reply without a write),
    /// then sends it. A record that cannot be stored costs only the replay: the answer still goes.
    private func keep(
        _ response: HTTPResponse, _ claim: IdempotencyClaim, now: Timestamp,
        then done: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        guard IdempotencyClaim.keeps(response.status) else { return done(response) }
        let record = claim.record(of: response, now: now)
        store.write({ ctx -> Bool in
            guard try ctx.idempotencyRecord(scope: record.scope, key: record.key) == nil else { return false }
            try ctx.insertIdempotencyRecord(record)
            return true
        }) { _ in done(response) }
    }

    private func success(_ reply: Reply, requestID: String) -> HTTPResponse {
        Envelope.response(for: reply, requestID: requestID)
    }

    private func failure(_ error: any Error, requestID: String, route: String) -> HTTPResponse {
        Envelope.failure(
            ErrorMapping.apiError(for: error, logger: logger, requestID: requestID, route: route), requestID: requestID)
    }
}
