import HTTP1
import Identity
import JSON

/// `POST /v1/events` (API.md §8).
struct EventController {
    var routes: [Route] {
        [Route(method: .POST, path: "/v1/events", access: .app, operationID: "ingestEvents", handler: ingest)]
    }

    func ingest(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let body = try context.jsonBody()
        try body.allowOnly(["subscriberId", "events"])
        let subscriberID = try context.subscriberID(body.requireString("subscriberId"))
        guard let list = body["events"]?.arrayValue else { throw APIError.invalidRequest("'events' must be an array.") }
        let events = try EventRules.validate(list, receivedAt: context.now)
        let now = context.now
        return .write { ctx in
            let (accepted, duplicates) = try Operations.ingest(
                events, subscriberID: subscriberID, caller: caller, in: ctx, now: now)
            return Reply(["accepted": Rendering.integer(accepted), "duplicates": Rendering.integer(duplicates)])
        }
    }
}
