import Glibc
import Identity
import JSON
import Synchronization

/// JSON lines on standard error, one object a line. Nothing secret is ever passed in: callers
/// log ids, codes and durations, never keys, secrets, proofs or bodies.
package final class Logger: Sendable {
    package enum Level: Int, Sendable, Comparable {
        case debug, info, warn, error
        package static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        package init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warn", "warning": self = .warn
            case "error": self = .error
            default: return nil
            }
        }
        var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warn: "warn"
            case .error: "error"
            }
        }
    }

    package let level: Level
    private let fd: Int32
    private let lock = Mutex(())

    package init(level: Level, fd: Int32 = 2) {
        self.level = level
        self.fd = fd
    }

    package func isEnabled(_ level: Level) -> Bool { level >= self.level }

    package func log(_ level: Level, _ message: String, _ fields: JSONObject = [:]) {
        guard isEnabled(level) else { return }
        var object: JSONObject = [
            "time": .string(Timestamp(millis: wallClockMillis()).rfc3339), "level": .string(level.name),
            "msg": .string(message),
        ]
        for (key, value) in fields { object[key] = value }
        var line = JSONWriter(capacity: 256)
        line.value(.object(object))
        line.append(10)
        // One write call per line so lines from different threads never interleave.
        lock.withLock { _ in
            line.withBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }
}

/// The system clock as a Timestamp-compatible millisecond count.
package func wallClockMillis() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}
