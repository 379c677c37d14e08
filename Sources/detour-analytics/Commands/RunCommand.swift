import Aggregator
import Foundation

/// `detour-analytics run`: ingest and aggregator in one process, the way `scripts/run` starts it.
enum RunCommand: Command {
    static let name = "run"
    static let summary = "run ingest and aggregator in one process"
    static var help: String {
        """
        Usage: detour-analytics run [options]

        Serves the ingest HTTP endpoint and loads the event log into PostgreSQL on a timer, in one
        process. Ingest never waits on PostgreSQL: while it is down, events are acknowledged from the
        log and loaded when it returns. SIGINT/SIGTERM/SIGHUP stop cleanly: ingest stops accepting and
        makes in-flight events durable, the running load cycle finishes (a statement it waits for is
        cancelled and the cycle rolled back), then the process exits 0. The
        same signal again stops it at once (exit 128 + the signal; nothing acknowledged is lost).

        \(databaseHelp)
        \(PipelineOptions.ingestHelp)
        \(PipelineOptions.logHelp)
        \(AggregatorOptions.help)

        Exit status: 0 stopped cleanly by a signal, 64 bad usage, 1 could not start (the address in use,
        another process writing the node's log), 128 + the signal when the same one came again during
        the shutdown (half a second or more after the first).
        """
    }

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let options = try PipelineOptions.parse(&arguments, environment: environment)
        let url = try requireDatabase(options.databaseURL)
        let configuration = try AggregatorOptions.parse(
            &arguments, databaseURL: url, dataDirectory: options.dataDirectory)
        try arguments.finish()
        let termination = Termination.watch()  // before start-up, which can wait for PostgreSQL

        let ingest = try IngestRuntime(options: options, databaseURL: url)
        let aggregator = try Aggregator(
            configuration: configuration,
            retention: AggregatorOptions.retention(segmentsDirectory: options.log.directory))
        aggregator.start()
        ServeCommand.announce(ingest, options: options)
        termination.stopOnSignal {
            ingest.stop()
            aggregator.stop()
        }
        return 0
    }
}
