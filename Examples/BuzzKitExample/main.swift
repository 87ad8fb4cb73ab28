// A device going anonymous → identified → logged out against a running `buzzkit serve`.
//
//   swift run buzzkit-example --base-url http://127.0.0.1:8080 --client-key bk_client_… \
//       [--identity-hash "$(swift run buzzkit identity-hash --secret "$ISEC" user_42)"] [--user user_42]
//
// `enqueue --count N` only queues N events and waits to be killed (the end-to-end "killed app" test).
import BuzzKit
import Foundation

var options: [String: String] = [:]
var mode = "demo"
var arguments = Array(CommandLine.arguments.dropFirst())
if let first = arguments.first, !first.hasPrefix("--") {
    mode = first
    arguments.removeFirst()
}
while arguments.count >= 2, arguments[0].hasPrefix("--") {
    options[String(arguments[0].dropFirst(2))] = arguments[1]
    arguments.removeFirst(2)
}

/// One line on standard output, written at once (a parent process reads it while this one runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

guard let base = options["base-url"].flatMap(URL.init(string:)), let key = options["client-key"] else {
    say("usage: buzzkit-example [enqueue --count N] --base-url URL --client-key KEY [--storage DIR]")
    say("       [--user ID] [--identity-hash HASH] [--platform ios|android|web|macos]")
    exit(2)
}
let storage = URL(
    fileURLWithPath: options["storage"]
        ?? FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-example-\(UUID().uuidString)"
        ).path)
var configuration = Configuration()
if let platform = options["platform"].flatMap(Platform.init(rawValue:)) { configuration.platform = platform }
configuration.retry.baseDelay = 0.2
configuration.retry.maxDelay = 2

BuzzKit.configure(clientKey: key, baseURL: base, storageDirectory: storage, configuration: configuration)

if mode == "enqueue" {
    // Queue events only; the parent kills this process (SIGKILL) while the server is down.
    let count = Int(options["count"] ?? "200") ?? 200
    for index in 0..<count { BuzzKit.track("killed_app_event", properties: ["n": .int(index)]) }
    say("queued \(count) as \(BuzzKit.anonymousId)")
    while true { sleep(60) }
}

let user = options["user"] ?? "user_\(Int.random(in: 1000...9999))"
say("storage: \(storage.path)")
say("1. anonymous: \(BuzzKit.anonymousId) (externalId: \(BuzzKit.externalId ?? "nil"))")
BuzzKit.applicationDidBecomeActive()
BuzzKit.track("onboarding_started", properties: ["step": 1])
BuzzKit.setPushToken("example-token-\(UUID().uuidString.prefix(8))", permission: .authorized)
BuzzKit.setPreferences(["news": false])
say("   tracked onboarding_started, registered a push token, chose topics")

BuzzKit.identify(
    user, email: "\(user)@example.com", identityHash: options["identity-hash"], attributes: ["plan": "trial"])
BuzzKit.setAttributes(["plan": "pro", "streak": 4])
BuzzKit.track("signed_up")
say("2. identified: \(BuzzKit.externalId ?? "nil") (the server merges \(BuzzKit.anonymousId) into it)")

let before = BuzzKit.anonymousId
BuzzKit.logout()
say(
    "3. logged out: new anonymous id \(BuzzKit.anonymousId) (was \(before)), externalId: \(BuzzKit.externalId ?? "nil")"
)
BuzzKit.track("browsing_after_logout")

let drained = await BuzzKit.flush(timeout: .seconds(15))
let status = BuzzKit.sharedClient?.queueStatus
say(
    "flush: \(drained ? "queue empty" : "not drained"); rejected \(status?.rejectedOperations ?? 0),"
        + " dropped \(status?.droppedEvents ?? 0)")
say("check: curl -s \(base.absoluteString)/v1/subscribers/\(user) -H 'Authorization: Bearer $SECRET'")
exit(drained ? 0 : 1)
