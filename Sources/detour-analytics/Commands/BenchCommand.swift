import EventModel
import Foundation

/// `detour-analytics bench`: component benchmarks for `bench/run`, hidden from the top-level help (a
/// tool for measuring, not for operating the pipeline).
///
/// Every subcommand prints machine-readable results, one `RESULT key=value ...` line each (values
/// with spaces are double-quoted), so `bench/run` can parse them. A benchmark whose component is not
/// built yet prints `RESULT bench=NAME available=false reason="..."` instead of a number.
enum BenchCommand: Command {
    static let name = "bench"
    static let summary = "(internal) component benchmarks used by bench/run; prints RESULT lines"
    static let help = """
        Usage: detour-analytics bench <bodies|segments|scanner|log|recovery|loader|reports> [options]

        Component benchmarks for bench/run (build with -c release: debug builds are far slower).
        Each prints one line per result: RESULT bench=NAME key=value ...

          bodies   --out DIR [--seed N] [--batches N] [--batch-size N] [--app ID] [--base-time ISO]
                   writes realistic request bodies with a fixed seed: single.json (one Detour event) and
                   batch-NNNN.json (batches for /api/analytics/batch)
          segments --data-dir DIR --csv FILE --events N [--seed N] [--app ID] [--codec zstd|gzip]
                   writes N unique normalised events as event-log segments under DIR/segments/node-1
                   and the same events as CSV in the column order of the events table (for psql \\copy)
          scanner  [--bodies DIR] [--seconds S]
                   the JSON scanner vs Foundation JSONSerialization on the same bodies (MB/s)
          log      --dir DIR [--bodies DIR] [--seconds S] [--codec zstd|gzip] [--threads N]
                   [--events-per-append N] [--durability fsync|interval:DUR] [--level N]
                   [--syncs-in-flight N] [--preallocate SIZE] [--max-batch SIZE] [--compressors N]
                   [--append completion|ndjson|records]
                   the event log writer alone: events/s, NDJSON MB/s, compression ratio; --threads
                   requests (default 8; bench/run uses 64) of --events-per-append envelopes in flight,
                   handed over as ingest does (--append completion, the default)
          recovery --dir DIR [--bodies DIR] [--codec zstd|gzip] [--segment-bytes SIZE] [--runs N]
                   start-up recovery of one full open segment (default 128MiB) ending in a torn frame:
                   seconds per writer start-up with the segment in the page cache and evicted from it
          loader   [--events N] [--work DIR] [--copy-first] [--database-url URL]
                   the aggregator's LoaderBenchmark: N envelopes from compressed segments to committed
                   rows vs psql \\copy of the same events as CSV (fresh schemas, dropped afterwards);
                   the load runs first unless --copy-first
          reports  [--sizes N[,N...]] [--links 1000] [--runs 3] [--work DIR] [--seed simulator|sql] [--database-url URL]
                   simulated worlds of about N events (cumulative sizes) loaded by the aggregator into a
                   fresh schema, then ReportBenchmark: median ms of every report and the daily job's queries
                   --seed sql: each size generated in SQL (ReportSeed) and rebuild_rollups() instead;
                   --schema S: time an existing seeded schema; --keep-schema: do not drop the seeded ones

        Every result line also carries peak_rss_kib (VmHWM of this process).
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        guard let which = arguments.popPositional() else {
            throw UsageError(
                description: "expected a benchmark: bodies, segments, scanner, log, recovery, loader or reports")
        }
        switch which {
        case "bodies": try runBodies(&arguments)
        case "segments": try runSegments(&arguments)
        case "scanner": try runScanner(&arguments)
        case "log": try runLog(&arguments)
        case "recovery": try runRecovery(&arguments)
        case "loader": try runLoader(&arguments, environment: environment)
        case "reports": try runReports(&arguments, environment: environment)
        default:
            throw UsageError(description: "unknown benchmark \(which)")
        }
        return 0
    }

    // MARK: scanner

    static func runScanner(_ arguments: inout Arguments) throws {
        let directory = try arguments.option("--bodies")
        let seconds = Double(try arguments.option("--seconds") ?? "2") ?? 2
        try arguments.finish()
        let bodies = try directory.map(readBodies(directory:))
        let result = ScannerBenchmark.run(bodies: bodies, seconds: seconds)
        report(
            "scanner",
            [
                ("bodies", bodies.map { String($0.count) } ?? "sample"),
                ("bytes_per_pass", String(result.bytesPerPass)),
                ("scanner_mbps", format(result.scannerMBps)),
                ("foundation_mbps", format(result.foundationMBps)),
                ("ratio", format(result.foundationMBps > 0 ? result.scannerMBps / result.foundationMBps : 0)),
            ])
    }

    /// The bodies written by `bench bodies` (every `*.json` in `directory`, sorted by name).
    static func readBodies(directory: String) throws -> [[UInt8]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }
            .sorted()
        guard !names.isEmpty else { throw UsageError(description: "no .json bodies in \(directory)") }
        return try names.map { name in
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else {
                throw UsageError(description: "cannot read \(directory)/\(name)")
            }
            return [UInt8](data)
        }
    }

    // MARK: output

    /// Prints `RESULT bench=NAME k=v ... peak_rss_kib=N`.
    static func report(_ bench: String, _ fields: [(String, String)]) {
        var line = "RESULT bench=\(bench)"
        for (key, value) in fields + [("peak_rss_kib", String(peakResidentKiB()))] {
            let needsQuotes = value.isEmpty || value.contains(" ") || value.contains("\"")
            line += " \(key)=" + (needsQuotes ? "\"" + value.replacingOccurrences(of: "\"", with: "'") + "\"" : value)
        }
        say(line)
    }

    /// A benchmark that cannot run in this build: says why, never prints a number.
    static func unavailable(_ bench: String, reason: String) {
        say("RESULT bench=\(bench) available=false reason=\"\(reason)\"")
    }

    /// Peak resident set size of this process (VmHWM) in KiB, 0 when /proc is not there.
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
