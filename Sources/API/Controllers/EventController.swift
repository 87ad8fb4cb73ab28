import HTTP1
import HTTPServer
import Identity
import JSON

/// `POST /v1/events` (API.md §8).
struct EventController {
    var routes: [Route] {
        [Route(method: .POST, path: "/v1/events", access: .app, operationID: "ingestEvents", handler: ingest)]
    }

    func ingest(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let now = context.now
        let subscriberID: SubscriberID
        let events: [NewEvent]
        // An empty body is `{}` to the general path, whatever its type.
        if !context.request.body.isEmpty { try context.requireJSONMediaType() }
        if let batch = EventBatchReader.read(context.request.body, receivedAt: now) {
            subscriberID = try context.subscriberID(batch.subscriberID)
            events = batch.events
        } else {
            // Anything but a valid batch of the usual shape: the general path, and its errors.
            let body = try context.jsonBody()
            try body.allowOnly(["subscriberId", "events"])
            subscriberID = try context.subscriberID(body.requireString("subscriberId"))
            guard let list = body["events"]?.arrayValue else {
                throw APIError.invalidRequest("'events' must be an array.")
            }
            events = try EventRules.validate(list, receivedAt: now)
        }
        return .write { ctx in
            let (accepted, duplicates) = try Operations.ingest(
                events, subscriberID: subscriberID, caller: caller, in: ctx, now: now)
            return Reply(["accepted": Rendering.integer(accepted), "duplicates": Rendering.integer(duplicates)])
        }
    }
}
