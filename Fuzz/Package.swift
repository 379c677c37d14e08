// swift-tools-version:6.2
// libFuzzer targets for detour-analytics' parsers (docs/reliability.md, "Fuzzing").
//
// This is a separate package so `swift build` / `swift test` of the main package stay untouched.
// The parsers are `package`-level API, which another package cannot see through a path
// dependency, so the modules under test are compiled into this package from symlinked source
// directories (Sources/EventModel -> ../../Sources/EventModel, and so on): the fuzzers always test
// the checked-out code, byte for byte.
//
// Build and run, in this directory (scripts/chaos does it; docs/reliability.md, "Fuzzing", runs it
// on a copy of the corpus, as a run adds what it finds to the directory it is given):
//   swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --product FuzzJSON
//   .build/release/FuzzJSON -max_total_time=600 "$(mktemp -d)" corpus/json
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]
// libFuzzer supplies main(): the fuzz entry points are library-style files.
let fuzzSettings = strict + [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "detour-fuzz",
    targets: [
        .systemLibrary(name: "CZlib", pkgConfig: "zlib"),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd"),
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(name: "CThreadName"),
        .target(name: "Locking", swiftSettings: strict),
        .target(name: "CivilTime", swiftSettings: strict),
        .target(name: "Observability", dependencies: ["CMalloc", "Locking"], swiftSettings: strict),
        .target(name: "EventModel", dependencies: ["CivilTime", "Locking"], swiftSettings: strict),
        .target(
            name: "EventLog", dependencies: ["CThreadName", "CZlib", "CZstd", "Observability"], swiftSettings: strict),
        .executableTarget(name: "FuzzJSON", dependencies: ["EventModel"], swiftSettings: fuzzSettings),
        .executableTarget(name: "FuzzEnvelope", dependencies: ["EventModel"], swiftSettings: fuzzSettings),
        .executableTarget(name: "FuzzNormalizer", dependencies: ["EventModel"], swiftSettings: fuzzSettings),
        .executableTarget(name: "FuzzSegment", dependencies: ["EventLog"], swiftSettings: fuzzSettings),
        .executableTarget(name: "FuzzLogRoundTrip", dependencies: ["EventLog"], swiftSettings: fuzzSettings),
    ]
)
