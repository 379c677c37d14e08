// swift-tools-version:6.2
// detour-analytics: a self-hosted analytics pipeline for deep-link attribution.
// Layers: C system library → Swift wrapper → component library → one thin executable.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "detour-analytics",
    products: [
        .executable(name: "detour-analytics", targets: ["detour-analytics"])
    ],
    targets: [
        // C libraries from Debian, found through pkg-config.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // glibc's <malloc.h> (mallinfo2, for the heap metrics), part of libc6-dev.
        .systemLibrary(name: "CMalloc"),
        // <sys/prctl.h> (naming a thread), part of libc6-dev.
        .systemLibrary(name: "CThreadName"),

        // Shared libraries.
        .target(name: "Locking", swiftSettings: strict),
        .target(name: "Observability", dependencies: ["CMalloc", "Locking"], swiftSettings: strict),
        .target(name: "CivilTime", swiftSettings: strict),
        .target(name: "JSONText", swiftSettings: strict),
        .target(name: "EventModel", dependencies: ["CivilTime", "Locking"], swiftSettings: strict),
        .target(
            name: "EventLog", dependencies: ["CThreadName", "CZlib", "CZstd", "Observability"], swiftSettings: strict),
        .target(name: "Postgres", dependencies: ["CLibPQ", "CivilTime"], swiftSettings: strict),

        // Components.
        .target(
            name: "Ingest",
            dependencies: [
                "CMicroHTTPD", "CZlib", "CZstd", "EventModel", "EventLog", "Postgres", "Observability", "Locking",
                "JSONText",
            ],
            swiftSettings: strict),
        .target(
            name: "Aggregator",
            dependencies: ["EventModel", "EventLog", "Postgres", "Observability", "CivilTime", "Locking"],
            swiftSettings: strict),
        .target(
            name: "Reports", dependencies: ["Postgres", "Observability", "CivilTime", "JSONText", "CZlib", "CZstd"],
            swiftSettings: strict),
        .target(
            name: "Simulator", dependencies: ["EventModel", "CZlib", "CivilTime", "Locking"], swiftSettings: strict),

        // The one executable.
        .executableTarget(
            name: "detour-analytics",
            dependencies: [
                "Observability", "EventModel", "EventLog", "Postgres", "Ingest", "Aggregator", "Reports",
                "Simulator", "Locking", "JSONText",
            ],
            swiftSettings: strict),

        // Tests mirror targets one to one; IntegrationTests run the whole pipeline.
        .target(
            name: "TestSupport", dependencies: ["Postgres", "Locking", "EventLog"], path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "EventModelTests", dependencies: ["EventModel", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "EventLogTests", dependencies: ["EventLog", "EventModel", "Locking", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "PostgresTests", dependencies: ["Postgres", "TestSupport", "Locking"], swiftSettings: strict),
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "EventLog", "EventModel", "TestSupport", "Locking", "Observability"],
            swiftSettings: strict),
        .testTarget(
            name: "AggregatorTests",
            dependencies: ["Aggregator", "EventLog", "EventModel", "Postgres", "TestSupport", "Locking"],
            swiftSettings: strict),
        .testTarget(
            name: "ReportsTests", dependencies: ["Reports", "Postgres", "TestSupport", "JSONText", "Locking"],
            swiftSettings: strict),
        .testTarget(
            name: "SimulatorTests", dependencies: ["Simulator", "EventModel", "Locking"], swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Ingest", "Aggregator", "Reports", "Simulator", "EventLog", "Postgres", "TestSupport",
                "detour-analytics",
            ],
            swiftSettings: strict),
        // Crash, outage, disk-full, hostile-input and isolation tests against the real binary (issue 9).
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["EventModel", "EventLog", "Postgres", "TestSupport", "Locking", "CivilTime", "JSONText"],
            swiftSettings: strict),
    ]
)
