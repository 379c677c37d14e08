import Foundation
import Testing

@testable import EventLog

/// Not a test: runs `LogBenchmark` when `DETOUR_BENCH_LOG` is set (see bench/eventlog/run.sh).
/// It asserts nothing about timings; figures are printed for bench/eventlog/results.md.
@Suite struct LogBenchmarkRun {
    @Test(
        "event log benchmark (only with DETOUR_BENCH_LOG set)",
        .enabled(if: ProcessInfo.processInfo.environment["DETOUR_BENCH_LOG"] != nil))
    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        var options = LogBenchmark.Options(
            directory: environment["DETOUR_BENCH_DIR"] ?? NSTemporaryDirectory() + "eventlog-bench")
        if let events = environment["DETOUR_BENCH_EVENTS"].flatMap(Int.init) { options.events = events }
        if let threads = environment["DETOUR_BENCH_THREADS"].flatMap(Int.init) { options.threads = threads }
        if let batch = environment["DETOUR_BENCH_BATCH"].flatMap(Int.init) { options.recordsPerAppend = batch }
        if let bytes = environment["DETOUR_BENCH_RECOVERY_MIB"].flatMap(Int64.init) {
            options.recoverySegmentBytes = bytes << 20
        }
        if environment["DETOUR_BENCH_INTERVAL"] != nil { options.durability = .interval(.milliseconds(50)) }
        if let micros = environment["DETOUR_BENCH_DELAY_US"].flatMap(Int64.init) {
            options.groupCommitDelay = .microseconds(micros)
        }
        if let level = environment["DETOUR_BENCH_LEVEL"].flatMap(Int.init) { options.compressionLevel = level }
        if let threads = environment["DETOUR_BENCH_ZIP_THREADS"].flatMap(Int.init) {
            options.compressionThreads = threads
        }
        if environment["DETOUR_BENCH_NDJSON"] != nil { options.usesNDJSON = true }
        if let codecs = environment["DETOUR_BENCH_CODECS"] {
            options.codecs = codecs.split(separator: ",").compactMap { Codec(rawValue: String($0)) }
        }
        let results = try LogBenchmark.run(options)
        print(LogBenchmark.render(results, options: options))
    }
}
