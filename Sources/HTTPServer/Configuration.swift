import HTTP1
import Reactor
import Threads

extension HTTPServer {
    /// Every limit and knob of the server, with the documented defaults (API.md §10).
    ///
    /// ```swift
    /// var configuration = HTTPServer.Configuration()
    /// configuration.port = 0           // let the kernel pick; `start()` returns it
    /// configuration.maxBodyBytes = 64 * 1024
    /// ```
    package struct Configuration: Sendable {
        /// IPv4 address to bind. Default `"127.0.0.1"`.
        package var host: String
        /// TCP port; 0 picks a free one. Default 8080.
        package var port: Int
        /// Event loop threads. Default: the number of online cores.
        package var eventLoopCount: Int
        /// Request target / header section / header count limits (414, 431).
        package var parserLimits: HTTPParserLimits
        /// Largest request body, measured after de-chunking and gzip decoding (413). Default 1 MiB.
        package var maxBodyBytes: Int
        /// Time from a request's first byte (or the accept) until its head and body are in (408). Default 10 s.
        package var headerReadTimeout: Duration
        /// How long a keep-alive connection may sit between requests before a silent close. Default 60 s.
        package var idleTimeout: Duration
        /// Open connections beyond which new ones get a 503 and are closed. Default 10 000.
        package var maxConnections: Int
        /// Smallest response body worth gzipping when the client accepts it. Default 1 KiB.
        package var gzipMinimumBytes: Int
        /// Which loop a connection lives on. Default `.byIncomingCPU`; not a setting of the
        /// server's configuration file.
        package var connectionPlacement: ConnectionPlacement = .byIncomingCPU

        /// Creates a configuration; every parameter defaults to the documented value.
        package init(
            host: String = "127.0.0.1",
            port: Int = 8080,
            eventLoopCount: Int = processorCount(),
            parserLimits: HTTPParserLimits = HTTPParserLimits(),
            maxBodyBytes: Int = 1024 * 1024,
            headerReadTimeout: Duration = .seconds(10),
            idleTimeout: Duration = .seconds(60),
            maxConnections: Int = 10_000,
            gzipMinimumBytes: Int = 1024
        ) {
            self.host = host
            self.port = port
            self.eventLoopCount = eventLoopCount
            self.parserLimits = parserLimits
            self.maxBodyBytes = maxBodyBytes
            self.headerReadTimeout = headerReadTimeout
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
            self.gzipMinimumBytes = gzipMinimumBytes
        }
    }
}

extension ConnectionStateMachine.Limits {
    /// The configuration's limits, times in nanoseconds.
    init(_ configuration: HTTPServer.Configuration) {
        self.init(
            parser: configuration.parserLimits, maxBodyBytes: configuration.maxBodyBytes,
            headerTimeout: configuration.headerReadTimeout.nanoseconds,
            idleTimeout: configuration.idleTimeout.nanoseconds, gzipMinimumBytes: configuration.gzipMinimumBytes)
    }
}
