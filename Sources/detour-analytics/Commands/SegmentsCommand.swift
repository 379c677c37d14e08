import EventLog
import Foundation

/// `detour-analytics segments list|inspect|verify|replay`: look inside the event log.
enum SegmentsCommand: Command {
    static let name = "segments"
    static let summary = "list, inspect, verify or replay event log segments"
    static let help = """
        Usage:
          detour-analytics segments list [--node NODE] [--data-dir DIR]
          detour-analytics segments inspect FILE
          detour-analytics segments verify [DIR]
          detour-analytics segments replay --from SEG [--node NODE] [--partition-max-lag-days N]
                                           [--data-dir DIR] [--database-url URL]

        list     every segment with its frames, events, bytes, received_at range and whether it is open;
                 exits 1 when there is no event log at <data-dir>/segments or no such --node
        inspect  one segment file frame by frame: offset, codec, events, checksum status
        verify   checks every frame's checksum under DIR (default <data-dir>/segments); exits 1 on damage,
                 naming each damaged frame's file and byte offset
        replay   loads segments from SEG onwards into PostgreSQL again; events already loaded are
                 skipped by (app_id, event_id), so a replay never duplicates; the checkpoint never moves back;
                 damaged frames are skipped, logged and counted on the summary line

        Options:
          --node NODE          ingest node directory under segments/ (default: every node)
          --partition-max-lag-days N
                               replay: as for aggregate (default 92); give the value the aggregator
                               runs with, so the replay creates the same day partitions
        \(dataDirectoryHelp)
        \(databaseHelp)

        Exit status: 0 done (replay: also with damaged frames skipped), 64 bad usage, 69 PostgreSQL
        unavailable or failing (replay), 1 no event log or no such node, damage found (verify), a file
        that cannot be read.
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        // The verb comes first: a positional found later may be an option's value (`--node n1 list`).
        let verb = arguments.popPositional()
        guard let verb, ["list", "inspect", "verify", "replay"].contains(verb) else {
            throw UsageError(description: "expected list, inspect, verify or replay first, got \(verb ?? "nothing")")
        }
        switch verb {
        case "list":
            let node = try arguments.option("--node")
            let data = try arguments.dataDirectory(environment)
            try arguments.finish()
            // A mistyped --data-dir or --node listed "0 segments" and exited 0, like an empty log.
            guard let segments = eventLog(in: data) else { return 1 }
            // A node is one directory under segments/: not a file, not `..` or a path (until
            // 2026-12-05 `--node afile` or `--node ..` listed "0 segments", exit 0).
            if let node,
                node.isEmpty || node == "." || node == ".." || node.contains("/")
                    || !isDirectory(segments + "/" + node)
            {
                let nodes = (try? FileManager.default.contentsOfDirectory(atPath: segments).sorted()) ?? []
                complain("error: no node \(node) under \(segments) (nodes: \(nodes.joined(separator: ", ")))\n")
                return 1
            }
            print(
                SegmentInspector.renderList(try SegmentInspector.list(directory: segments, node: node)), terminator: "")
            return 0
        case "inspect":
            guard let file = arguments.popPositional() else {
                throw UsageError(
                    description: "inspect needs a FILE (a segment: <data-dir>/segments/node-1/<number>.seg)")
            }
            try arguments.finish()
            print(try SegmentInspector.inspect(path: file).rendered(), terminator: "")
            return 0
        case "verify":
            // Options first: taking the positional first took `--data-dir`'s value for DIR
            // ("--data-dir needs a value", exit 64, for `segments verify --data-dir /var/lib/detour`).
            let data = try arguments.dataDirectory(environment)
            let given = arguments.popPositional()
            try arguments.finish()
            let path = given ?? data + "/segments"
            let report = try SegmentInspector.verify(path: path)
            // The data directory itself said "ok: 0 segments" and exited 0 (its segments/ and
            // deadletter/ read as two empty nodes): an operator checking the log after a crash was told
            // all was well. An event log with no segment yet stays "ok: 0 segments", as for list.
            guard !report.segments.isEmpty || !isDirectory(path + "/segments") else {
                complain(
                    "error: \(path) is a data directory, not an event log: verify \(path)/segments, "
                        + "or pass --data-dir \(path)\n")
                return 1
            }
            print(report.rendered(), terminator: "")
            return report.exitCode
        case "replay":
            return try ReplayCommand.run(&arguments, environment: environment)
        default:
            throw UsageError(description: "unknown segments command \(verb)")
        }
    }
}
