import API
import Glibc
import HTTP1
import HTTPServer
import JSON
import WebhookDelivery

/// Everything `buzzkit serve` can be told, from the config file, then the environment, then flags
/// (each overriding the one before; API.md §11).
struct Settings {
    var host = "127.0.0.1"
    var port = 8080
    var database = "./data/buzzkit.sqlite"
    var logLevel: Logger.Level = .info
    var bootstrapWorkspaceKey: String?
    var synchronousFull = true
    var readerConnections = 4
    var snapshotCacheMiB = 64
    /// PostgreSQL only: connections one server opens at most, and writer threads among them.
    var postgresPoolSize = 10
    var postgresWriterThreads = 4
    /// PostgreSQL only: threads that run request handlers, so event loops never wait on a read.
    var handlerThreads = 32
    var shutdownDrainSeconds = 10
    var server = HTTPServer.Configuration()
    var application = ApplicationConfiguration()
    var webhooks = DeliveryWorker.Configuration()

    /// Reads `file`; a missing file is fine unless it was named explicitly.
    mutating func apply(configFile path: String, required: Bool) throws {
        guard let bytes = readFile(path) else {
            if required { throw CLIError("cannot read config file \(path)") }
            return
        }
        let root: JSONObject
        do {
            guard let object = try JSONParser.parse(bytes).objectValue else {
                throw CLIError("\(path): not a JSON object")
            }
            root = object
        } catch let error as JSONParseError {
            throw CLIError("\(path): \(error.message)")
        }
        for (key, value) in root {
            switch key {
            case "host": host = try string(value, key)
            case "port": port = try int(value, key, 0...65535)
            case "database": database = try string(value, key)
            case "logLevel":
                guard let level = Logger.Level(name: try string(value, key)) else {
                    throw CLIError("logLevel: debug, info, warn or error")
                }
                logLevel = level
            case "synchronous":
                switch try string(value, key) {
                case "full": synchronousFull = true
                case "normal": synchronousFull = false
                default: throw CLIError("synchronous: full or normal")
                }
            case "readerConnections": readerConnections = try int(value, key, 1...64)
            case "snapshotCacheMiB": snapshotCacheMiB = try int(value, key, 0...65536)
            case "postgresPoolSize": postgresPoolSize = try int(value, key, 2...1000)
            case "postgresWriterThreads": postgresWriterThreads = try int(value, key, 1...64)
            case "postgresHandlerThreads": handlerThreads = try int(value, key, 1...1024)
            case "shutdownDrainSeconds": shutdownDrainSeconds = try int(value, key, 0...600)
            case "eventLoops": server.eventLoopCount = try int(value, key, 1...256)
            case "maxConnections": server.maxConnections = try int(value, key, 1...1_000_000)
            case "maxBodyBytes": server.maxBodyBytes = try int(value, key, 1024...(64 << 20))
            case "maxTargetBytes": server.parserLimits.maxTargetLength = try int(value, key, 64...(1 << 20))
            case "maxHeaderBytes": server.parserLimits.maxHeaderSectionBytes = try int(value, key, 1024...(1 << 20))
            case "maxHeaderCount": server.parserLimits.maxHeaderCount = try int(value, key, 8...10_000)
            case "headerTimeoutSeconds": server.headerReadTimeout = .seconds(try int(value, key, 1...3600))
            case "idleTimeoutSeconds": server.idleTimeout = .seconds(try int(value, key, 1...86_400))
            case "clientKeyRatePerSecond":
                application.clientKeyRatePerSecond = Double(try int(value, key, 0...1_000_000))
            case "clientKeyBurst": application.clientKeyBurst = Double(try int(value, key, 1...1_000_000))
            case "webhookRetryScheduleSeconds":
                guard let items = value.arrayValue, items.count <= 100 else {
                    throw CLIError("webhookRetryScheduleSeconds must be an array of at most 100 integers")
                }
                webhooks.retryScheduleSeconds = try items.map { try int($0, key, 0...604_800) }
            case "webhookAllowPrivateNetworks":
                guard let allow = value.boolValue else {
                    throw CLIError("webhookAllowPrivateNetworks must be true or false")
                }
                setAllowPrivateNetworks(allow)
            default: throw CLIError("\(path): unknown setting '\(key)'")
            }
        }
    }

    /// `BUZZKIT_HOST`, `BUZZKIT_PORT`, `BUZZKIT_DATABASE`, `BUZZKIT_BOOTSTRAP_WORKSPACE_KEY`, `BUZZKIT_LOG_LEVEL`.
    mutating func applyEnvironment() throws {
        if let value = environment("BUZZKIT_HOST") { host = value }
        if let value = environment("BUZZKIT_PORT") {
            guard let p = Int(value), (0...65535).contains(p) else { throw CLIError("BUZZKIT_PORT must be 0 to 65535") }
            port = p
        }
        if let value = environment("BUZZKIT_DATABASE") { database = value }
        if let value = environment("BUZZKIT_BOOTSTRAP_WORKSPACE_KEY") { bootstrapWorkspaceKey = value }
        if let value = environment("BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS") {
            guard value == "true" || value == "false" else {
                throw CLIError("BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS must be true or false")
            }
            setAllowPrivateNetworks(value == "true")
        }
        if let value = environment("BUZZKIT_LOG_LEVEL") {
            guard let level = Logger.Level(name: value) else {
                throw CLIError("BUZZKIT_LOG_LEVEL: debug, info, warn or error")
            }
            logLevel = level
        }
    }

    /// One switch for both sides: the endpoints' check at creation and the worker's at send time.
    private mutating func setAllowPrivateNetworks(_ allow: Bool) {
        webhooks.destinations = DestinationPolicy(allowPrivateNetworks: allow)
        application.webhookDestinations = webhooks.destinations
    }

    private func string(_ value: JSONValue, _ key: String) throws -> String {
        guard let s = value.stringValue else { throw CLIError("\(key) must be a string") }
        return s
    }

    private func int(_ value: JSONValue, _ key: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = value.intValue, range.contains(Int(n)) else {
            throw CLIError("\(key) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(n)
    }
}

/// A command-line failure: printed as `buzzkit: <message>`, exit status 1 (2 for usage).
struct CLIError: Error {
    var message: String
    var status: Int32 = 1
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}

func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let string = String(cString: value)
    return string.isEmpty ? nil : string
}

func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n > 0 { bytes += chunk[0..<n] }
        if n < chunk.count { break }
    }
    return bytes
}

/// `mkdir -p` of the folder holding `path`.
func createParentDirectory(of path: String) throws {
    guard let slash = path.lastIndex(of: "/") else { return }
    let folder = String(path[..<slash])
    guard !folder.isEmpty else { return }
    var current = folder.hasPrefix("/") ? "/" : ""
    for part in folder.split(separator: "/") {
        current += part
        if mkdir(current, 0o750) != 0 && errno != EEXIST {
            throw CLIError("cannot create folder \(current): \(String(cString: strerror(errno)))")
        }
        current += "/"
    }
}
