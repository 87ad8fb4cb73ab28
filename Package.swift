// swift-tools-version:6.0
import PackageDescription

// Every server module is `package`-visible only; the one published library is the BuzzKit SDK (public API).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "buzzkit-server",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "buzzkit", targets: ["CLI"]),
        // The client SDK an app embeds (API.md §16): Foundation only, public API.
        .library(name: "BuzzKit", targets: ["BuzzKit"]),
        .executable(name: "buzzkit-example", targets: ["BuzzKitExample"]),
    ],
    targets: [
        // MARK: - C interop: only what Swift cannot import by itself
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL"),
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(name: "COpenSSLTLS", path: "Sources/COpenSSLTLS"),
        .systemLibrary(name: "CPostgreSQL", path: "Sources/CPostgreSQL"),

        // MARK: - Wire format, event loop, server
        // Reading a String's UTF-8 in place, for the modules that read request text byte by byte.
        .target(name: "StringBytes", swiftSettings: swiftSettings),
        .target(name: "HTTP1", dependencies: ["StringBytes"], swiftSettings: swiftSettings),
        // Locks, condition waits, the monotonic clock and named threads over pthreads: no Foundation.
        .target(name: "Threads", dependencies: ["CLinux"], swiftSettings: swiftSettings),
        .target(name: "Reactor", dependencies: ["CLinux", "Threads"], swiftSettings: swiftSettings),
        .target(
            name: "HTTPServer", dependencies: ["HTTP1", "Reactor", "CZlib", "StringBytes", "Threads"],
            swiftSettings: swiftSettings),

        // MARK: - Storage engine and crypto primitives
        // Migration files and the ledger check both engines share: pure, no I/O.
        .target(name: "Migrations", swiftSettings: swiftSettings),
        .target(
            name: "SQLite", dependencies: ["CSQLite", "Threads", "Migrations", "StringBytes"],
            swiftSettings: swiftSettings),
        .target(name: "Crypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        .target(
            name: "Postgres", dependencies: ["CPostgreSQL", "Threads", "Migrations"], swiftSettings: swiftSettings),
        .target(name: "JSON", dependencies: ["StringBytes"], swiftSettings: swiftSettings),

        // MARK: - Domain, its SQLite store, the API, the executable
        .target(name: "Identity", dependencies: ["Crypto", "JSON", "StringBytes"], swiftSettings: swiftSettings),
        .executableTarget(name: "FileEmbedder", swiftSettings: swiftSettings),
        .plugin(
            name: "EmbedFiles", capability: .buildTool(),
            dependencies: ["FileEmbedder"]),
        .target(
            name: "Storage", dependencies: ["Identity", "SQLite", "Migrations", "Threads"],
            swiftSettings: swiftSettings, plugins: ["EmbedFiles"]),
        .target(
            name: "PostgresStorage", dependencies: ["Identity", "Postgres", "JSON", "Threads", "Migrations"],
            swiftSettings: swiftSettings, plugins: ["EmbedFiles"]),
        .target(
            name: "WebhookDelivery", dependencies: ["Identity", "Crypto", "WebhookSigning", "Threads"],
            swiftSettings: swiftSettings),
        .target(
            name: "API",
            dependencies: [
                "HTTPServer", "Identity", "JSON", "StringBytes", "Threads", "WebhookDelivery", "WebhookSigning",
            ],
            swiftSettings: swiftSettings, plugins: ["EmbedFiles"]),
        // `buzzkit copy`: one reader and one writer per engine behind a small seam.
        .target(
            name: "StoreCopy", dependencies: ["SQLite", "Postgres", "JSON", "Migrations"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "CLI",
            dependencies: [
                "API", "Storage", "SQLite", "PostgresStorage", "StoreCopy", "WebhookDelivery", "WebhookSigning",
                "WebhookClient", "Threads",
            ],
            swiftSettings: swiftSettings),

        // MARK: - Webhooks: signing and the outbound HTTP client the delivery worker plugs in
        .target(name: "WebhookSigning", dependencies: ["Crypto"], swiftSettings: swiftSettings),
        .target(
            name: "WebhookClient", dependencies: ["COpenSSLTLS", "HTTP1", "Reactor", "Threads"],
            swiftSettings: swiftSettings),

        // MARK: - The client SDK (depends on nothing of the server), its example and bench
        .target(name: "BuzzKit", swiftSettings: swiftSettings),
        .executableTarget(
            name: "BuzzKitExample", dependencies: ["BuzzKit"], path: "Examples/BuzzKitExample",
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "BuzzKitSDKBench", dependencies: ["BuzzKit"], path: "bench/sdk", exclude: ["run.sh", "README.md"],
            swiftSettings: swiftSettings),

        // MARK: - Tests
        .target(
            name: "TestSupport",
            dependencies: ["API", "Identity", "Storage", "HTTP1", "HTTPServer", "Postgres", "PostgresStorage"],
            path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTP1", "Reactor", "Threads"],
            swiftSettings: swiftSettings),
        .testTarget(name: "ThreadsTests", dependencies: ["Threads"], swiftSettings: swiftSettings),
        .testTarget(
            name: "SQLiteTests", dependencies: ["SQLite", "CSQLite", "Migrations", "Threads", "TestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(name: "MigrationsTests", dependencies: ["Migrations"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PostgresTests", dependencies: ["Postgres", "TestSupport", "Migrations"],
            swiftSettings: swiftSettings),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], swiftSettings: swiftSettings),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: swiftSettings),
        .testTarget(
            name: "IdentityTests", dependencies: ["Identity", "JSON", "Crypto"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "Identity", "SQLite", "TestSupport", "Postgres", "PostgresStorage", "Migrations",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "APITests",
            dependencies: [
                "API", "TestSupport", "Identity", "JSON", "HTTP1", "HTTPServer", "Storage", "SQLite", "Postgres",
                "Migrations",
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "BuzzKitTests", dependencies: ["BuzzKit"], swiftSettings: swiftSettings),
        .testTarget(
            name: "BuzzKitEndToEndTests",
            dependencies: ["BuzzKit", "BuzzKitExample", "CLI", "TestSupport", "Identity"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "WebhookDeliveryTests",
            dependencies: [
                "WebhookDelivery", "TestSupport", "API", "Identity", "Storage", "WebhookSigning", "SQLite", "Postgres",
                "Migrations", "PostgresStorage",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "StoreCopyTests",
            dependencies: [
                "StoreCopy", "SQLite", "Storage", "Postgres", "PostgresStorage", "TestSupport", "Migrations",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "WebhookSigningTests", dependencies: ["WebhookSigning", "Crypto"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "WebhookClientTests", dependencies: ["WebhookClient", "Reactor", "Threads"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["CLI", "TestSupport", "Identity", "JSON", "HTTP1", "Postgres", "WebhookDelivery"],
            swiftSettings: swiftSettings),
    ]
)
