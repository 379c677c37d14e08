import Aggregator
import Foundation

/// `detour-analytics segments replay --from SEG`: reloads history, idempotently.
enum ReplayCommand {
    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        guard let text = try arguments.option("--from"), let segment = UInt64(text) else {
            throw UsageError(description: "replay needs --from SEG (a segment number, e.g. 1)")
        }
        let node = try arguments.option("--node")
        let url = try arguments.databaseURL(environment)
        let data = try arguments.dataDirectory(environment)
        var configuration = AggregatorConfiguration(databaseURL: try requireDatabase(url), dataDirectory: data)
        configuration.partitionMaxLagDays = try AggregatorOptions.partitionMaxLagDays(
            &arguments, default: configuration.partitionMaxLagDays)
        try arguments.finish()
        // A mistyped --data-dir replayed nothing and reported "0 records read" with status 0.
        guard eventLog(in: data) != nil else { return 1 }
        let summary: Replay.Summary
        do {
            summary = try Replay(configuration: configuration).replay(fromSegment: segment, nodes: node.map { [$0] })
        } catch {
            guard case .database = error else { throw error }
            // 69 with one line, as aggregate --once and the other database commands; until 2026-12-02
            // the generic handler made it 1, the status of a bug.
            return databaseUnavailable("\(error)")
        }
        let damaged =
            summary.damagedFrames == 0
            ? ""
            : ", \(summary.damagedFrames) damaged frame\(summary.damagedFrames == 1 ? "" : "s") skipped (see segments verify)"
        say(
            "replay: \(summary.records) records read, \(summary.rows) new rows, \(summary.batches) transactions"
                + damaged)
        // `--from 1000` for 100 looked like a replay that found everything loaded (until 2026-12-05).
        if summary.records == 0 {
            complain(
                "replay: warning: no record at or after segment \(segment)\(node.map { " of node \($0)" } ?? "");"
                    + " is --from beyond the newest segment? (segments list shows them)\n")
        }
        return 0
    }
}
