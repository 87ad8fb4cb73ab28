import Foundation
import Glibc
import TestSupport
import XCTest

/// `buzzkit webhook-verify` and the README's Python snippet agree (API.md §14): what one signs the
/// other accepts, and a change to any signed part is refused by both.
final class WebhookVerifyCLITests: XCTestCase {
    private var directory: URL!
    // 32 bytes, base64: the shape of every endpoint secret.
    private let secret = "whsec_" + Data((0..<32).map { UInt8(($0 * 7 + 3) % 256) }).base64EncodedString()

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-whv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The README's Python block after `<!-- webhook-verify-python -->`, plus a driver that calls it.
    private func pythonVerifier() throws -> String {
        let readme = repositoryRoot.appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let marker = try XCTUnwrap(text.range(of: "<!-- webhook-verify-python -->\n```python\n"), "README snippet")
        let end = try XCTUnwrap(text.range(of: "\n```", range: marker.upperBound..<text.endIndex))
        let snippet = String(text[marker.upperBound..<end.lowerBound])
        let driver = """

            import sys
            secret, msg_id, timestamp, signature, body_path = sys.argv[1:6]
            headers = {"webhook-id": msg_id, "webhook-timestamp": timestamp, "webhook-signature": signature}
            print("valid" if verify_webhook(secret, headers, open(body_path, "rb").read()) else "invalid")
            """
        let script = path("verify.py")
        try (snippet + "\n" + driver).write(toFile: script, atomically: true, encoding: .utf8)
        return script
    }

    private func python(_ script: String, _ arguments: [String]) throws -> String {
        let result = try runProcess("/usr/bin/env", ["python3", script] + arguments)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testThePythonSnippetAcceptsWhatTheCLISignsAndNothingElse() throws {
        let body = Array(#"{"id":"evt_1","type":"subscriber.merged","data":{"name":"Zoë 🐝"}}"#.utf8)
        try Data(body).write(to: URL(fileURLWithPath: path("body.json")))
        try Data(body + [0x0A]).write(to: URL(fileURLWithPath: path("changed.json")))
        let now = String(Int(Date().timeIntervalSince1970))
        let signed = try runBuzzkit([
            "webhook-verify", "--secret", secret, "--id", "evt_1", "--timestamp", now, path("body.json"),
        ])
        XCTAssertEqual(signed.status, 0, signed.stderr)
        let signature = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(signature.hasPrefix("v1,") && signature.count == 47, signature)

        let verifier = try pythonVerifier()
        XCTAssertEqual(try python(verifier, [secret, "evt_1", now, signature, path("body.json")]), "valid")
        XCTAssertEqual(try python(verifier, [secret, "evt_2", now, signature, path("body.json")]), "invalid")
        XCTAssertEqual(try python(verifier, [secret, "evt_1", now, signature, path("changed.json")]), "invalid")
        let later = String(Int(now)! + 1)
        XCTAssertEqual(try python(verifier, [secret, "evt_1", later, signature, path("body.json")]), "invalid")

        // A signature made an hour ago is valid cryptographically but refused as a replay.
        let old = String(Int(now)! - 3600)
        let stale = try runBuzzkit([
            "webhook-verify", "--secret", secret, "--id", "evt_1", "--timestamp", old, path("body.json"),
        ])
        let staleSignature = stale.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try python(verifier, [secret, "evt_1", old, staleSignature, path("body.json")]), "invalid")
        let staleCheck = try runBuzzkit([
            "webhook-verify", "--secret", secret, "--id", "evt_1", "--timestamp", old, "--signature", staleSignature,
            path("body.json"),
        ])
        XCTAssertEqual(staleCheck.status, 0, "the CLI checks the signature, not the clock")
    }

    func testTheCLIVerifiesASignatureMadeIndependently() throws {
        let body = Array(#"{"id":"evt_9","type":"webhook.test"}"#.utf8)
        try Data(body).write(to: URL(fileURLWithPath: path("body.json")))
        // Python's hmac, not our code, computes the signature a receiver's library would.
        let script = """
            import base64, hashlib, hmac, sys
            key = base64.b64decode(sys.argv[1][len("whsec_"):])
            signed = b"evt_9.1700000000." + open(sys.argv[2], "rb").read()
            print("v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode())
            """
        try script.write(toFile: path("sign.py"), atomically: true, encoding: .utf8)
        let signature = try python(path("sign.py"), [secret, path("body.json")])
        let arguments = ["webhook-verify", "--secret", secret, "--id", "evt_9", "--timestamp", "1700000000"]

        let valid = try runBuzzkit(arguments + ["--signature", signature, path("body.json")])
        XCTAssertEqual(valid.status, 0, valid.stderr)
        XCTAssertEqual(valid.stdout, "valid\n")
        // Several signatures, as during a rotation: one match is enough.
        let listed = try runBuzzkit(arguments + ["--signature", "v1,bm9wZQ== " + signature, path("body.json")])
        XCTAssertEqual(listed.stdout, "valid\n")
        // From standard input, byte for byte.
        let piped = try runProcess(
            "/bin/sh",
            ["-c", "\"$0\" \"$@\" < \"\(path("body.json"))\"", TestServer.binaryPath] + arguments + [
                "--signature", signature, "-",
            ])
        XCTAssertEqual(piped.stdout, "valid\n", piped.stderr)

        let wrong = try runBuzzkit(arguments + ["--signature", "v1,bm9wZQ==", path("body.json")])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertEqual(wrong.stdout, "invalid\n")
        XCTAssertTrue(wrong.stderr.contains("expected webhook-signature: \(signature)"), wrong.stderr)
    }

    func testRefusesABadSecretOrTimestamp() throws {
        try Data("{}".utf8).write(to: URL(fileURLWithPath: path("body.json")))
        for (secret, timestamp) in [("not-a-secret", "1700000000"), ("whsec_###", "1700000000"), (secret, "soon")] {
            let result = try runBuzzkit([
                "webhook-verify", "--secret", secret, "--id", "e", "--timestamp", timestamp, path("body.json"),
            ])
            XCTAssertEqual(result.status, 2, "\(secret) \(timestamp): \(result.stderr)")
            XCTAssertEqual(result.stdout, "")
        }
        let missing = try runBuzzkit([
            "webhook-verify", "--secret", secret, "--id", "e", "--timestamp", "1", path("none.json"),
        ])
        XCTAssertEqual(missing.status, 2)
    }
}
