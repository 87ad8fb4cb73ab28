import HTTP1
import Identity
import JSON

/// `POST /v1/identify` (API.md §6).
struct IdentifyController {
    var routes: [Route] {
        [Route(method: .POST, path: "/v1/identify", access: .app, operationID: "identify", handler: identify)]
    }

    func identify(_ context: RequestContext) throws -> Outcome {
        let caller = try context.requireCaller()
        let body = try context.jsonBody()
        try body.allowOnly([
            "externalId", "anonymousId", "email", "identityHash", "identityToken", "attributes", "subscribe", "device",
        ])
        // Validate every field before anything is queued: an invalid call changes nothing.
        let externalID = try body.requireString("externalId")
        try IDRules.validateExternalID(externalID, blocked: caller.tenant.settings.blockedExternalIds)
        let anonymousID = try body.string("anonymousId")
        if let anonymousID { try IDRules.validateAnonymousID(anonymousID) }
        let email = try body.string("email")
        if let email { try EmailRules.validate(email) }
        let attributes = try body.object("attributes")
        if let attributes { try AttributeMerge.validate(attributes, limits: caller.tenant.settings.attributeLimits) }
        var proof: IdentityProof?
        if let token = try body.string("identityToken") {
            proof = .token(token)
        } else if let hash = try body.string("identityHash") {
            proof = .hash(hash)
        }
        let command = IdentifyCommand(
            externalID: externalID, anonymousID: anonymousID, email: email, proof: proof, attributes: attributes,
            subscribeEmail: try SubscriberController.subscribeEmail(body),
            device: try DeviceController.device(try body.object("device"), deviceID: nil, now: context.now))
        let now = context.now
        let metrics = context.metrics
        return .write { ctx in
            let result = try Operations.identify(command, caller: caller, in: ctx, now: now)
            metrics.recordMerge(shape: result.merge?.shape.rawValue ?? "none")
            if let refusal = result.merge?.refusal { metrics.recordMergeRefusal(refusal) }
            return try SubscriberController.reply(result, in: ctx)
        }
    }
}
