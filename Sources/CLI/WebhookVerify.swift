import WebhookSigning

/// `buzzkit webhook-verify`: lets a receiver check their verification code against ours (API.md §14).
///
/// Without `--signature` it prints the `webhook-signature` value we would send for this id,
/// timestamp and body; with it, prints `valid` (exit 0) or `invalid` (exit 1), and on a mismatch
/// the expected value on standard error, so the receiver sees what their code should compute.
func webhookVerify(_ arguments: ArraySlice<String>) throws {
    let (flags, positional) = try parseFlags(arguments, allowed: ["secret", "id", "timestamp", "signature"])
    guard let secret = flags["secret"], let id = flags["id"], let stamp = flags["timestamp"], positional.count == 1
    else { throw CLIError(usage, status: 2) }
    guard let timestamp = Int64(stamp), timestamp >= 0 else {
        throw CLIError("--timestamp is the webhook-timestamp header: Unix seconds", status: 2)
    }
    // "-" reads the body from standard input; either way the bytes are used exactly as they are.
    let path = positional[0] == "-" ? "/dev/stdin" : positional[0]
    guard let body = readFile(path) else { throw CLIError("cannot read \(positional[0])", status: 2) }
    let expected: String
    do {
        expected = try WebhookSignature.sign(secret: secret, id: id, timestamp: timestamp, body: body)
    } catch let error as WebhookSecretError {
        throw CLIError("--secret: \(error)", status: 2)
    }
    guard let signature = flags["signature"] else {
        print(expected)
        return
    }
    if try WebhookSignature.verify(secret: secret, id: id, timestamp: timestamp, body: body, signatureHeader: signature)
    {
        print("valid")
    } else {
        print("invalid")
        printError("expected webhook-signature: \(expected)")
        throw CLIError("the signature does not match this secret, id, timestamp and body")
    }
}
