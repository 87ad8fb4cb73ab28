import Foundation
import XCTest

@testable import BuzzKit

/// A clock the test moves by hand.
final class ManualWallClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }
}

/// Jitter fixed by the test.
struct FixedJitter: JitterSource {
    var value: Double
    func unit() -> Double { value }
}

/// Records every request and answers from a script (then with `fallback`).
final class FakeTransport: Transport, @unchecked Sendable {
    private let lock = NSLock()
    private var script: [TransportResult] = []
    private var sent: [OutgoingRequest] = []
    /// Success; an identify's answer says it linked the anonymous id.
    var fallback: TransportResult = .response(
        status: 200, retryAfter: nil, body: Array(#"{"success":true,"data":{"merge":{"shape":"link"}}}"#.utf8))

    func answer(_ results: TransportResult...) {
        lock.lock()
        script += results
        lock.unlock()
    }

    var requests: [OutgoingRequest] {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    func send(_ request: OutgoingRequest) -> TransportResult {
        lock.lock()
        defer { lock.unlock() }
        sent.append(request)
        return script.isEmpty ? fallback : script.removeFirst()
    }
}

func status(_ code: Int, retryAfter: String? = nil, errorCode: String? = nil) -> TransportResult {
    let body = errorCode.map { #"{"success":false,"error":{"code":"\#($0)"}}"# } ?? #"{"success":true}"#
    return .response(status: code, retryAfter: retryAfter, body: Array(body.utf8))
}

/// A fresh storage directory under the temporary folder, removed when the test ends.
func temporaryStorage() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-sdk-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    TemporaryFolders.shared.add(url)
    return url
}

/// Folders the tests made; each test case removes them in `tearDown`.
final class TemporaryFolders: @unchecked Sendable {
    static let shared = TemporaryFolders()
    private let lock = NSLock()
    private var urls: [URL] = []

    func add(_ url: URL) {
        lock.lock()
        urls.append(url)
        lock.unlock()
    }

    func removeAll() {
        lock.lock()
        for url in urls { try? FileManager.default.removeItem(at: url) }
        urls = []
        lock.unlock()
    }
}

/// A client with no delivery thread: the test drives `deliverOnce()`.
func makeClient(
    _ directory: URL, transport: FakeTransport, clock: ManualWallClock = ManualWallClock(),
    configure: (inout Configuration) -> Void = { _ in }
) throws -> BuzzKitClient {
    var configuration = Configuration()
    configuration.platform = .ios
    configuration.device = DeviceContext(platform: .ios, appVersion: "1.0", osVersion: "18.0", model: "iPhone16,2")
    configuration.log = { _ in }
    configure(&configuration)
    return try BuzzKitClient(
        clientKey: "bk_client_test", baseURL: URL(string: "http://127.0.0.1:1")!, storageDirectory: directory,
        configuration: configuration, transport: transport, clock: clock, jitter: FixedJitter(value: 0.5),
        startsDelivery: false)
}

/// Delivers until the queue is idle or the head waits; returns the steps.
@discardableResult
func drain(_ client: BuzzKitClient, limit: Int = 100) -> [DeliveryStep] {
    var steps: [DeliveryStep] = []
    for _ in 0..<limit {
        let step = client.deliverOnce()
        steps.append(step)
        if case .idle = step { break }
        if case .waiting = step { break }
    }
    return steps
}

extension OutgoingRequest {
    var json: [String: Any] {
        guard let body else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
    var eventNames: [String] { (json["events"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } }
    var line: String { "\(method) \(path)" }
}
