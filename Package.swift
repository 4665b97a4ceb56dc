// swift-tools-version: 6.2
import PackageDescription

// Layers, bottom up (docs/design.md draws them from this file: .ci/diagram.py): ISO15693 → Type5NDEF, TagImages,
// SensorTags → TagSimulator → Readers (the seam, the client, the driver registry) → the drivers (DriverSim, DriverPCSC,
// DriverLibNFC, DriverFEIG: one target each, listed once in LinkedDrivers, which the executable registers);
// VLoggerModel → VLoggerStore (+ CSQLite, GRDB), VLoggerConfig → VLoggerOutbox (the consumer seam and the output-kind
// protocol) → the outputs (VLoggerSync, VLoggerMQTT, VLoggerWebhook: one target each, listed once in LinkedOutputs,
// which the executable registers; none imports VLoggerCore); FieldState; VLoggerCore → VLoggerService → vlogger.
// Nothing above Readers but the executable names a driver, nothing below it an output (.ci/imports.py checks both).
let package = Package(
    name: "vlogger",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "vlogger", targets: ["vlogger"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        // Fleet sync to a central PostgreSQL (VLoggerSync).
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // The packages the ones above bring in, pinned too, so that a .deb is built from the versions named here
        // (Package.resolved cannot be committed: this machine's package copies carry commit ids of their own).
        // No target uses them directly.
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-algorithms", exact: "1.2.1"),
        .package(url: "https://github.com/apple/swift-asn1", exact: "1.7.4"),
        .package(url: "https://github.com/apple/swift-async-algorithms", exact: "1.1.4"),
        .package(url: "https://github.com/apple/swift-atomics", exact: "1.3.0"),
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-collections", exact: "1.6.0"),
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", exact: "1.7.0"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", exact: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-transport-services", exact: "1.28.0"),
        .package(url: "https://github.com/apple/swift-numerics", exact: "1.1.1"),
        .package(url: "https://github.com/apple/swift-service-context", exact: "1.5.1"),
        .package(url: "https://github.com/apple/swift-system", exact: "1.8.1"),
        // Sparkplug B payloads (the generated code is committed: the protoc plugin is not built in CI).
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        // The operator's pages: templates that escape by default, replaceable from a folder.
        .package(url: "https://github.com/hummingbird-project/swift-mustache", exact: "2.1.1"),
    ],
    targets: [
        // Host facts Glibc's Swift module lacks (the kernel's clock sync state) and the commit a binary was built
        // from, passed by deploy/build-deb.sh as a C macro (`vlogger --version`).
        .target(name: "CHost"),
        .target(name: "ISO15693", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        .target(name: "Type5NDEF", dependencies: ["ISO15693"]),
        // Tag images and their dump formats (project JSON, Proxmark3, Flipper): dump and restore on any reader use them.
        .target(name: "TagImages", dependencies: ["ISO15693"]),
        .target(name: "TagSimulator", dependencies: ["ISO15693", "TagImages", "SensorTags"]),
        // OPC UA as values, no I/O (issue 49): the binary encoding (OPC 10000-6 §5.2), namespace 0's generated
        // types, UA-TCP and secure-conversation chunks, the policies' symmetric cryptography (swift-crypto). The
        // server comes on top of it.
        .target(
            name: "OPCUA",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]),
        // The OPC UA server (issue 49) on SwiftNIO above the protocol target: UA-TCP connections, secure channels,
        // sessions, the services, subscriptions, and namespace 0's part generated from the OPC Foundation's NodeSet
        // (tools/opcua/nodeset.py). It knows no vlogger type; the gateway's namespace is put on it from above.
        .target(
            name: "OPCUAServer",
            dependencies: [
                "OPCUA",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Tag security: originality signatures (secp128r1 ECDSA written here; SHA-256 from swift-crypto).
        .target(
            name: "TagSecurity",
            dependencies: ["ISO15693", .product(name: "Crypto", package: "swift-crypto")]),
        // Sensor and data-logger tags (Fudan FM13, TI RF430FRL152H, ST SmarTag, ams SL13A): their commands, answers
        // and records as the vendors' own code has them (docs/reference/sensor-tags.md).
        .target(name: "SensorTags", dependencies: ["ISO15693", "VLoggerModel"]),
        .systemLibrary(
            name: "CLibNFC",
            pkgConfig: "libnfc",
            providers: [.apt(["libnfc-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .systemLibrary(
            name: "CPCSCLite",
            pkgConfig: "libpcsclite",
            providers: [.apt(["libpcsclite-dev"])]
        ),
        // The reader seam (TagReader, ReaderDriver and its registry) and the ISO 15693 client over it.
        .target(name: "Readers", dependencies: ["ISO15693", "Type5NDEF"]),
        // The drivers, one target each: a new driver is a target here and one line in Sources/vlogger/Drivers.swift.
        .target(
            name: "DriverSim", dependencies: ["Readers", "ISO15693", "TagSimulator"], path: "Sources/Drivers/Sim"),
        .target(name: "DriverPCSC", dependencies: ["Readers", "ISO15693", "CPCSCLite"], path: "Sources/Drivers/PCSC"),
        .target(
            name: "DriverLibNFC", dependencies: ["Readers", "ISO15693", "CLibNFC"], path: "Sources/Drivers/LibNFC"),
        .target(name: "DriverFEIG", dependencies: ["Readers", "ISO15693", "FEIG"], path: "Sources/Drivers/FEIG"),
        .target(
            name: "DriverPN5180", dependencies: ["Readers", "ISO15693", "CHost"], path: "Sources/Drivers/PN5180"),
        // The one list of linked drivers: the executable, the tests and the fuzzers register it.
        .target(
            name: "LinkedDrivers",
            dependencies: ["Readers", "DriverSim", "DriverPCSC", "DriverLibNFC", "DriverFEIG", "DriverPN5180"],
            path: "Sources/Drivers/Linked"),
        // The domain values every layer above shares (readings, events, tags, writes, field values, times and
        // durations, safe text) and how each is formatted. No I/O.
        .target(name: "VLoggerModel", dependencies: ["ISO15693"]),
        // The live state of the fields (readers, tags present, latest values with units, alarms) with a change
        // stream: fed by the polling jobs, read by the pages, the read API, the metrics and servers. No I/O.
        .target(name: "FieldState", dependencies: ["VLoggerModel", "ISO15693"]),
        // The store behind its own target: migrations, records, the store writer, export; SQLite through GRDB.
        .target(
            name: "VLoggerStore",
            dependencies: ["ISO15693", "VLoggerModel", "CSQLite", .product(name: "GRDB", package: "GRDB.swift")]),
        // FEIG OBID ID ISC host protocol (serial / TCP): frames, CRC, status codes.
        // A TCP connection opened with a time limit, for the clients that speak to a socket themselves.
        .target(name: "TCPConnect"),
        .target(name: "FEIG", dependencies: ["ISO15693", "TCPConnect"]),
        // The configuration's common ground: the TOML reader, sections that report file:line issues, secrets read
        // from files, names and remote hosts. Every layer that reads settings uses it; it knows no concern.
        .target(name: "VLoggerConfig", dependencies: ["VLoggerModel", "ISO15693"]),
        // The outbox seam: a consumer of the store's rows (a cursor per consumer and table, deliver, acknowledge)
        // and the output-kind protocol every output registers through (its section, its settings, its consumer).
        .target(
            name: "VLoggerOutbox",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerConfig", "FieldState", "ISO15693",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "VLoggerCore",
            dependencies: [
                "VLoggerModel", "VLoggerConfig", "VLoggerOutbox",
                "CHost", "ISO15693", "Type5NDEF", "TagImages", "Readers", "VLoggerStore", "TagSecurity", "SensorTags",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Fleet sync: the local store as outbox, idempotent batches into a central PostgreSQL (postgres-nio), the
        // central schema and its migrations.
        .target(
            name: "VLoggerSync",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerConfig", "VLoggerOutbox",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The central end of the MQTT fan-in (`vlogger central ingest`): its own MQTT 3.1.1 subscriber, which
        // acknowledges a message only after the central commit (libmosquitto acknowledges on receipt).
        .target(
            name: "VLoggerIngest",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerSync", "TCPConnect",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // MQTT output (libmosquitto): rows of the store's outbox published as JSON, acknowledged by the broker, or
        // as a Sparkplug B 3.0 edge node (protobuf payloads, Sparkplug/sparkplug_b.proto and its generated Swift).
        .target(
            name: "VLoggerMQTT",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerConfig", "VLoggerOutbox", "CMosquitto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            exclude: ["Sparkplug/sparkplug_b.proto"]),
        // Webhook output: chosen events POSTed as signed JSON (async-http-client, swift-crypto's HMAC).
        .target(
            name: "VLoggerWebhook",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerConfig", "VLoggerOutbox",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The OPC UA server as an output kind ([opcua]): the PKI folder, the users file, the gateway's namespace
        // read from the field state.
        .target(
            name: "VLoggerOPCUA",
            dependencies: [
                "OPCUA", "OPCUAServer", "FieldState", "VLoggerModel", "VLoggerStore", "VLoggerConfig", "VLoggerOutbox",
                "ISO15693",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The one list of linked output kinds: the executable, the tests and the fuzzer register it (beside the
        // drivers). A new output is a target above and one line in Sources/LinkedOutputs.
        .target(
            name: "LinkedOutputs",
            dependencies: ["VLoggerOutbox", "VLoggerSync", "VLoggerMQTT", "VLoggerWebhook", "VLoggerOPCUA"]),
        // The gateway service: one ServiceGroup with a polling job per reader, the store writer, the HTTP
        // listener (Hummingbird), metrics (swift-metrics with the Prometheus backend), sd_notify and reload.
        .target(
            name: "VLoggerService",
            dependencies: [
                "VLoggerModel",
                "VLoggerCore", "VLoggerStore", "VLoggerConfig", "VLoggerOutbox", "FieldState", "Readers", "ISO15693",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The read API's OpenAPI document: served from API/OpenAPIDocument.swift (.ci/openapi-document.sh).
            exclude: ["API/openapi.json"]),
        // What only the command line needs, apart from its argument parsing: `watch`'s screen, tag dumps and
        // restores, `doctor`'s checks. Unit-tested on their own (VLoggerCLITests).
        .target(
            name: "VLoggerCLI",
            dependencies: [
                "VLoggerCore", "VLoggerModel", "VLoggerStore", "VLoggerConfig", "FieldState", "Readers", "TagImages",
                "ISO15693", "CHost",
            ]),
        .executableTarget(
            name: "vlogger",
            dependencies: [
                "VLoggerModel",
                "VLoggerCore",
                "VLoggerStore",
                "TagImages",
                "TagSecurity",
                "ISO15693",
                "Readers",
                "Type5NDEF",
                "VLoggerService",
                "VLoggerSync",
                "VLoggerIngest",
                "VLoggerConfig",
                "VLoggerOutbox",
                "FieldState",
                "CHost",
                "LinkedDrivers",
                "LinkedOutputs",
                "VLoggerCLI",
                "OPCUA",
                "VLoggerOPCUA",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The PC/SC test bench's virtual reader-and-tag for vsmartcard vpcd (bench/pcsc/bench.sh). Not shipped.
        .executableTarget(
            name: "vlogger-vcard", dependencies: ["Readers", "DriverSim", "DriverPCSC", "TagSimulator", "ISO15693"]),
        // A FEIG ID ISC reader emulated in front of a simulated field (host protocol over a pty or loopback TCP, with
        // injectable faults): the feig driver's test bench. Not shipped.
        .target(name: "FEIGEmulator", dependencies: ["FEIG", "ISO15693", "Readers", "DriverSim", "TagSimulator"]),
        // A PN5180 at the level of its pins on a simulated clock, the simulated field behind it (the tests' chip).
        .target(
            name: "PN5180Emulator", dependencies: ["DriverPN5180", "ISO15693", "Readers", "DriverSim", "TagSimulator"]),
        .executableTarget(
            name: "vlogger-feig-reader", dependencies: ["FEIGEmulator", "FEIG", "TagSimulator", "ISO15693", "CHost"]),
        // Fuzz targets live outside the shipped libraries: the decoders' fuzzer (ISO15693Fuzzing) and the fuzzer of
        // every other parser of outside input (ParserFuzzing). Test targets and the two fuzz executables use them.
        .target(name: "ISO15693Fuzzing", dependencies: ["ISO15693"]),
        .target(
            name: "ParserFuzzing",
            dependencies: [
                "VLoggerModel",
                "ISO15693Fuzzing", "ISO15693", "Type5NDEF", "TagImages", "TagSimulator", "Readers", "FEIG",
                "DriverFEIG", "DriverPCSC", "DriverPN5180", "LinkedDrivers",
                "VLoggerStore", "TagSecurity", "SensorTags",
                "VLoggerCore", "VLoggerMQTT", "VLoggerSync", "VLoggerIngest", "VLoggerConfig", "VLoggerOutbox",
                "LinkedOutputs",
                "VLoggerService", "OPCUA", "OPCUAServer", "VLoggerOPCUA", "FieldState",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Stand-alone fuzzer: `swift run -c release iso15693-fuzz 1000000`. Not part of `swift test`.
        .executableTarget(name: "iso15693-fuzz", dependencies: ["ISO15693Fuzzing"], path: "bench/Fuzz"),
        // Stand-alone fuzzer of every parser of outside input: `swift run -c release vlogger-fuzz 1000000`. Not part of `swift test`.
        .executableTarget(
            name: "vlogger-fuzz", dependencies: ["ParserFuzzing", "Readers", "VLoggerOutbox"], path: "bench/ParserFuzz"),
        // Store benchmark helper, driven by bench/store-bench.sh. Not part of `swift test`.
        .executableTarget(
            name: "store-bench",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "ExportOracle", "ISO15693", "ISO15693Fuzzing",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "bench/StoreBench"),
        // Many gateways into one central PostgreSQL, driven by bench/sync-fleet-bench.sh. Not part of `swift test`.
        .executableTarget(
            name: "sync-fleet-bench",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "VLoggerCore", "VLoggerSync", "VLoggerService", "VLoggerOutbox",
                "ISO15693",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "bench/SyncFleetBench"),
        // The OPC UA server's benchmark, driven by bench/opcua/bench.sh. Not part of `swift test`.
        .executableTarget(
            name: "opcua-bench",
            dependencies: [
                "OPCUA", "OPCUAServer", "VLoggerOPCUA", "FieldState", "VLoggerModel", "ISO15693",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "bench/OPCUABench"),
        // Air-time benchmark on the simulator's model: `swift run -c release air-bench [seeds]`. Not part of `swift test`.
        .executableTarget(
            name: "air-bench",
            dependencies: [
                "VLoggerCore", "VLoggerStore", "Readers", "DriverSim", "TagSimulator", "TagImages", "ISO15693",
                "SensorTags", "DriverPN5180", "PN5180Emulator",
            ],
            path: "bench/AirBench"),
        // The export's test oracle: the same export as one SQLite query that formats every value in SQL (the store's
        // tests and its benchmark compare with it). Not shipped.
        .target(name: "ExportOracle", dependencies: ["VLoggerStore", "VLoggerModel"], path: "Tests/ExportOracle"),
        // The drivers registered for the test suites (the `.drivers` trait), as the executable registers them.
        .target(
            name: "TestDrivers",
            dependencies: [
                "Readers", "LinkedDrivers", "VLoggerOutbox", "LinkedOutputs", "DriverPCSC", "DriverSim", "ISO15693",
            ],
            path: "Tests/TestDrivers"),
        .testTarget(name: "ISO15693Tests", dependencies: ["ISO15693", "ISO15693Fuzzing"]),
        .testTarget(name: "SensorTagsTests", dependencies: ["SensorTags", "ISO15693"]),
        .testTarget(
            name: "FEIGTests",
            dependencies: [
                "TestDrivers",
                "FEIG", "FEIGEmulator", "Readers", "DriverFEIG", "DriverSim", "TagSimulator", "TagImages", "ISO15693",
                "CHost", "VLoggerCore", "VLoggerStore",
            ]),
        .testTarget(name: "TagSimulatorTests", dependencies: ["TagSimulator", "TagImages", "ISO15693"]),
        .testTarget(
            name: "OPCUATests", dependencies: ["OPCUA", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "VLoggerOPCUATests",
            dependencies: [
                "VLoggerOPCUA", "OPCUA", "OPCUAServer", "FieldState", "VLoggerModel", "VLoggerCore", "ISO15693",
                "VLoggerOutbox", "VLoggerStore", "TestDrivers",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        .testTarget(
            name: "OPCUAServerTests",
            dependencies: [
                "OPCUAServer", "OPCUA", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            exclude: ["Clients"]),
        .testTarget(name: "TagSecurityTests", dependencies: ["TagSecurity", "ISO15693"]),
        .testTarget(name: "Type5NDEFTests", dependencies: ["Type5NDEF"]),
        .testTarget(
            name: "ReadersTests",
            dependencies: [
                "TestDrivers", "CHost",
                "Readers", "DriverSim", "DriverPCSC", "DriverLibNFC", "DriverFEIG", "DriverPN5180", "PN5180Emulator",
                "Type5NDEF", "TagSimulator",
                "TagImages", "ISO15693", "ISO15693Fuzzing",
            ]),
        .testTarget(name: "VLoggerModelTests", dependencies: ["VLoggerModel", "ISO15693Fuzzing"]),
        .testTarget(name: "FieldStateTests", dependencies: ["FieldState", "VLoggerModel", "ISO15693"]),
        .testTarget(
            name: "VLoggerStoreTests",
            dependencies: [
                "VLoggerModel", "VLoggerStore", "ExportOracle", "ISO15693", "ISO15693Fuzzing",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "VLoggerCoreTests",
            dependencies: [
                "TestDrivers", "VLoggerConfig", "VLoggerOutbox", "VLoggerCLI",
                "VLoggerModel",
                "VLoggerCore", "VLoggerStore", "Type5NDEF", "ISO15693", "Readers", "DriverSim", "DriverPCSC",
                "ISO15693Fuzzing", "DriverFEIG", "DriverPCSC", "DriverPN5180", "PN5180Emulator", "TagSimulator",
                "TagImages",
                "ParserFuzzing",
                "SensorTags",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "VLoggerCLITests",
            dependencies: [
                "TestDrivers", "VLoggerCLI", "VLoggerCore", "VLoggerModel", "VLoggerStore", "VLoggerConfig",
                "FieldState",
                "ISO15693",
            ]),
        .testTarget(
            name: "VLoggerMQTTTests",
            dependencies: [
                "TestDrivers", "VLoggerConfig", "VLoggerOutbox",
                "VLoggerMQTT", "VLoggerCore", "VLoggerStore", "VLoggerModel",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        .testTarget(
            name: "VLoggerServiceTests",
            dependencies: [
                "TestDrivers", "VLoggerConfig", "VLoggerOutbox",
                "VLoggerModel",
                "VLoggerService", "VLoggerCore", "VLoggerStore", "TagSimulator", "Readers", "DriverSim", "DriverFEIG",
                "ISO15693",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "VLoggerSyncTests",
            dependencies: [
                "TestDrivers", "VLoggerConfig", "VLoggerOutbox",
                "VLoggerModel",
                "VLoggerSync", "VLoggerIngest", "VLoggerCore", "VLoggerStore", "ISO15693",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The process-level suites: the CLI, the service, faults, chaos and load (the integration lane of .ci/run).
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "VLoggerModel", "ISO15693", "VLoggerCore", "VLoggerStore", "VLoggerWebhook", "TagSecurity", "OPCUA",
                "VLoggerSync", "VLoggerOutbox", "VLoggerService", "VLoggerMQTT", "VLoggerIngest",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ]
)

// Strict builds: a warning in the project's own code is an error (the dependencies keep their own settings).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
