import Foundation

/// `detour-analytics serve`: the ingest HTTP edge alone (run the aggregator elsewhere or from cron).
enum ServeCommand: Command {
    static let name = "serve"
    static let summary = "run ingest alone: the HTTP endpoint writing to the event log"
    static var help: String {
        """
        Usage: detour-analytics serve [options]

        Accepts SDK and link-service events over HTTP and answers once they are durable in the event
        log. API keys are read from PostgreSQL every 10 seconds and cached in <data-dir>/keys.json, so
        serving continues with known keys while PostgreSQL is down. SIGINT/SIGTERM/SIGHUP stop
        cleanly: /readyz turns 503, in-flight requests finish and become durable, then the process
        exits. The same signal again stops it at once (exit 128 + the signal; nothing acknowledged is
        lost).

        \(databaseHelp)
        \(PipelineOptions.ingestHelp)
        \(PipelineOptions.logHelp)

        Exit status: 0 stopped cleanly by a signal, 64 bad usage, 1 could not start (the address in use,
        another process writing the node's log), 128 + the signal when the same one came again during
        the shutdown (half a second or more after the first).
        """
    }

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let options = try PipelineOptions.parse(&arguments, environment: environment)
        try arguments.finish()
        let termination = Termination.watch()  // before start-up, which can wait for PostgreSQL
        let ingest = try IngestRuntime(options: options, databaseURL: try requireDatabase(options.databaseURL))
        announce(ingest, options: options)
        termination.stopOnSignal { ingest.stop() }
        return 0
    }

    /// Prints where the server listens (the bound port, which matters when 0 was asked for).
    static func announce(_ ingest: IngestRuntime, options: PipelineOptions) {
        say("listening on http://\(options.ingest.host):\(ingest.server.port)")
    }
}
