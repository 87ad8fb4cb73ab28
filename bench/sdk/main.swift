// The SDK's numbers: what track() costs the caller's thread, how fast one client delivers to a
// local server, and the memory of 100,000 queued events. Run through bench/sdk/run.sh.
//
//   BuzzKitSDKBench track [--calls N]                          (no server needed)
//   BuzzKitSDKBench memory [--events N]                        (no server needed)
//   BuzzKitSDKBench deliver --base-url URL --client-key KEY [--events N]
import BuzzKit
import Foundation

var options: [String: String] = [:]
var arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.isEmpty ? "track" : arguments.removeFirst()
while arguments.count >= 2 {
    options[String(arguments[0].dropFirst(2))] = arguments[1]
    arguments.removeFirst(2)
}

/// Nobody listens on the discard port: the queue only grows, the delivery thread backs off.
let nowhere = URL(string: "http://127.0.0.1:9")!

func storage() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-sdk-bench-\(UUID().uuidString)")
}

func quiet(_ durability: Durability, maxEvents: Int = 50_000) -> Configuration {
    var configuration = Configuration()
    configuration.durability = durability
    configuration.maxQueuedEvents = maxEvents
    configuration.retry.baseDelay = 5
    configuration.log = { _ in }
    return configuration
}

func percentile(_ sorted: [UInt64], _ fraction: Double) -> Double {
    Double(sorted[min(Int(Double(sorted.count) * fraction), sorted.count - 1)]) / 1000
}

/// Resident memory of this process in KiB (Linux), from /proc/self/status.
func residentKiB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return -1 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// The ceiling for a durable `track()`: appending a record of the same size to a file with
/// `write` and `fsync`, nothing else, on the same filesystem. Returns the median in µs.
@discardableResult
func measureAppendFsync(bytes: Int, calls: Int) -> Double {
    let path = storage().path
    let descriptor = open(path, O_CREAT | O_WRONLY | O_APPEND, 0o600)
    precondition(descriptor >= 0, "cannot open \(path)")
    defer {
        close(descriptor)
        unlink(path)
    }
    let record = [UInt8](repeating: 0x2A, count: bytes)
    var samples: [UInt64] = []
    samples.reserveCapacity(calls)
    for _ in 0..<calls {
        let start = DispatchTime.now().uptimeNanoseconds
        let written = record.withUnsafeBytes { write(descriptor, $0.baseAddress, bytes) }
        precondition(written == bytes && fsync(descriptor) == 0, "write or fsync failed: errno \(errno)")
        samples.append(DispatchTime.now().uptimeNanoseconds - start)
    }
    samples.sort()
    let median = percentile(samples, 0.5)
    print(
        String(
            format: "ceiling: write + fsync of %d bytes: median %.1f µs, p99 %.1f µs over %d calls", bytes, median,
            percentile(samples, 0.99), calls))
    return median
}

@discardableResult
func measureTrack(_ name: String, _ durability: Durability, calls: Int) -> Double {
    let client = BuzzKitClient(
        clientKey: "bk_client_bench", baseURL: nowhere, storageDirectory: storage(),
        configuration: quiet(durability))
    let properties: [String: JSONValue] = ["screen": "home", "n": 1, "ratio": 0.5]
    for _ in 0..<50 { client.track("warm_up", properties: properties) }
    var samples: [UInt64] = []
    samples.reserveCapacity(calls)
    for _ in 0..<calls {
        let start = DispatchTime.now().uptimeNanoseconds
        client.track("screen_view", properties: properties)
        samples.append(DispatchTime.now().uptimeNanoseconds - start)
    }
    samples.sort()
    print(
        String(
            format: "track() %@: median %.1f µs, p99 %.1f µs, max %.1f µs over %d calls", name,
            percentile(samples, 0.5), percentile(samples, 0.99), Double(samples.last!) / 1000, calls))
    return percentile(samples, 0.5)
}

/// `threads` callers tracking at once on one client, `.synchronous`: the group commit shares fsyncs.
func measureConcurrentTrack(threads: Int, callsEach: Int) {
    let client = BuzzKitClient(
        clientKey: "bk_client_bench", baseURL: nowhere, storageDirectory: storage(),
        configuration: quiet(.synchronous))
    let lock = NSLock()
    nonisolated(unsafe) var samples: [UInt64] = []
    let start = DispatchTime.now().uptimeNanoseconds
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        var mine: [UInt64] = []
        for _ in 0..<callsEach {
            let begin = DispatchTime.now().uptimeNanoseconds
            client.track("screen_view", properties: ["screen": "home"])
            mine.append(DispatchTime.now().uptimeNanoseconds - begin)
        }
        lock.lock()
        samples += mine
        lock.unlock()
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    samples.sort()
    print(
        String(
            format: "track() synchronous, %d threads at once: median %.1f µs, p99 %.1f µs; %.0f calls/s in all",
            threads, percentile(samples, 0.5), percentile(samples, 0.99), Double(samples.count) / seconds))
}

switch mode {
case "track":
    let calls = Int(options["calls"] ?? "2000") ?? 2000
    // A queued screen_view is about 170 bytes in the log (queue file size / events, `memory`).
    let before = measureAppendFsync(bytes: 170, calls: min(calls, 2000))
    let synchronous = measureTrack("synchronous (fsync each call)", .synchronous, calls: min(calls, 2000))
    let after = measureAppendFsync(bytes: 170, calls: min(calls, 2000))
    let ceiling = (before + after) / 2
    print(
        String(
            format: "track() synchronous vs the ceiling: %.2f× its median, %+.1f µs of our own", synchronous / ceiling,
            synchronous - ceiling))
    measureTrack("grouped (write each call, fsync every 50 ms)", .grouped(interval: 0.05), calls: calls * 10)
    measureConcurrentTrack(threads: 1, callsEach: min(calls, 2000))
    measureConcurrentTrack(threads: 8, callsEach: min(calls, 2000) / 8)
case "memory":
    let events = Int(options["events"] ?? "100000") ?? 100_000
    let before = residentKiB()
    let directory = storage()
    let client = BuzzKitClient(
        clientKey: "bk_client_bench", baseURL: nowhere, storageDirectory: directory,
        configuration: quiet(.grouped(interval: 0.05), maxEvents: events))
    for index in 0..<events { client.track("screen_view", properties: ["screen": "home", "n": .int(index)]) }
    let after = residentKiB()
    let size =
        (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("queue.log").path))?[
            .size] as? Int ?? -1
    print(
        "memory: \(client.queueStatus.queuedEvents) events queued: RSS \(before) KiB → \(after) KiB"
            + " (+\((after - before) / 1024) MiB), queue file \(size / 1024) KiB")
case "deliver":
    guard let base = options["base-url"].flatMap(URL.init(string:)), let key = options["client-key"] else {
        print("deliver needs --base-url and --client-key")
        exit(2)
    }
    let events = Int(options["events"] ?? "20000") ?? 20_000
    let client = BuzzKitClient(
        clientKey: key, baseURL: base, storageDirectory: storage(),
        configuration: quiet(.grouped(interval: 0.05), maxEvents: events))
    let start = Date()
    for index in 0..<events { client.track("screen_view", properties: ["n": .int(index)]) }
    let queued = Date().timeIntervalSince(start)
    let drained = await client.flush(timeout: .seconds(300))
    let total = Date().timeIntervalSince(start)
    print(
        String(
            format: "deliver: %d events queued in %.2f s, delivered in %.2f s: %.0f events/s (drained: %@)", events,
            queued, total, Double(events) / total, drained ? "yes" : "no"))
default:
    print("modes: track, memory, deliver")
    exit(2)
}
