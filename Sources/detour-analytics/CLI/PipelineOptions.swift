import EventLog
import Foundation
import Ingest

/// Flags shared by `run`, `serve` and `aggregate`, parsed and validated once.
struct PipelineOptions {
    var dataDirectory: String
    var databaseURL: String?
    var log: LogConfiguration
    var deadLetter: LogConfiguration
    /// Dead letters are deleted at this age (nil: kept whatever their age).
    var deadLetterRetention: Duration?
    /// Dead letters never use more than this; the oldest are deleted to keep them under half of it
    /// (nil: no cap).
    var deadLetterMaxBytes: Int64?
    var ingest: IngestConfiguration

    static let ingestHelp = """
        Ingest:
          --http-addr HOST:PORT   listen address (env DETOUR_HTTP_ADDR; default 127.0.0.1:8080; port 0 = any free port)
          --threads N             HTTP worker threads (default: number of cores)
          --max-body SIZE         largest request body on the wire (default 1MiB)
          --max-decompressed SIZE largest body after gzip/zstd decoding (default 10MiB)
          --max-event SIZE        largest single event (default 32KiB)
          --max-batch-events N    most events per batch request (default 2000)
          --max-buffered-bodies SIZE  request bytes held at once across all connections: bodies, and
                                  their events until durable; more is 503 overloaded (default 64MiB;
                                  at least --max-body; below --max-body + 1.3x --max-decompressed, a
                                  warning at start); requests of at most 64KiB (SDK events) may use
                                  a quarter more
          --max-name-length N     longest event name in characters (default 128; at most 256)
          --max-depth N           deepest JSON nesting of one event (default 32; at most 256; deeper:
                                  that event is rejected too_deep; a body nesting over N + 64 is
                                  refused whole)
          --max-values N          most JSON values in one body, keys included: more is 413
                                  too_many_values (default 1000000: 16 MB of parse per request)
          --connection-limit N    most open connections (default 4096)
          --per-ip-connection-limit N  most open connections from one client address (default 0 = none)
          --idle-timeout DUR      close connections idle this long (default 30s; whole seconds, at least 1s)
          --connection-memory SIZE HTTP memory per connection: request head and read buffer (default 16KiB)
          --rate-limit N          requests per second per app and key kind, 429 beyond it (default off)
          --rate-limit-burst N    requests an app may send at once above the rate (default: one second's worth)
          --report-threads N      report API workers: reports run at once, each holding its rows (the
                                  per-link report at 1,000 links and 30 days: ~100 MB) (default 4; 1-64)
        """

    static let logHelp = """
        Event log:
        \(dataDirectoryHelp)
          --node NAME             this ingest node's segment directory (env DETOUR_NODE; default node-1)
          --codec zstd|gzip       frame compression (default zstd)
          --durability MODE       fsync (default: answer after fdatasync of every group commit) or
                                  interval:DUR (answer after write, fsync every DUR: a crash may lose up to DUR)
          --syncs-in-flight N     fsync durability: fdatasync calls in flight at once (default 1, 1-8)
          --commit-delay DUR      longest extra wait to gather a group commit; it ends as soon as as many
                                  requests wait as the group before held, so a lone client is never held
                                  (default 200us; 0 = none: only requests that arrive during a sync share a group)
          --commit-bytes SIZE     group commit size that triggers a write at once (default 256KiB; 1B...64MiB)
          --segment-bytes SIZE    roll a segment at this size (default 128MiB; 64KiB...64GiB)
          --segment-age DUR       roll a segment at this age, 1s...7d (default 5m)
          --max-disk SIZE         stop accepting (503) when segments use this much disk (default 0 = no cap;
                                  at least 64KiB)
          --preallocate SIZE      extend the open segment with written zeros this much at a time, so
                                  small frames' fsyncs write no inode (default 4MiB; 0 = off)
          --dead-letter-retention DUR  delete dead letters (rejected input) this old (default 7d; 0 keeps all)
          --dead-letter-max-disk SIZE  dead letters never use more than this; the oldest are deleted to
                                  keep them under half of it (default 1GiB or 4x --segment-bytes if more;
                                  0 = no cap; at least 4x --segment-bytes)
        """

    /// Parses the flags both components share.
    static func parse(_ arguments: inout Arguments, environment: Environment) throws -> PipelineOptions {
        let data = try arguments.dataDirectory(environment)
        let url = try arguments.databaseURL(environment)
        let (nodeName, nodeSource) = try arguments.option("--node", orEnvironment: "DETOUR_NODE", environment)
        let node = nodeName ?? "node-1"
        guard !node.isEmpty, !node.contains("/"), !node.hasPrefix(".") else {
            throw UsageError(description: "\(nodeSource) must be a plain name, got \(node)")
        }
        let log = try parseLog(&arguments, directory: data + "/segments", node: node)
        let (deadLetter, deadLetterRetention, deadLetterMaxBytes) = try parseDeadLetter(
            &arguments, log: log, directory: data + "/deadletter")
        let ingest = try parseIngest(&arguments, environment: environment)
        return PipelineOptions(
            dataDirectory: data, databaseURL: url, log: log, deadLetter: deadLetter,
            deadLetterRetention: deadLetterRetention, deadLetterMaxBytes: deadLetterMaxBytes, ingest: ingest)
    }

    /// The event log's flags (`logHelp`).
    private static func parseLog(_ arguments: inout Arguments, directory: String, node: String) throws
        -> LogConfiguration
    {
        var log = LogConfiguration(directory: directory, node: node)
        // Appends that arrive while a frame is being written and fsynced form the next frame; the
        // adaptive delay then waits (at most 200 µs) only for as many requests as the group before
        // held, the clients it answered: fewer, larger groups under concurrent load (about 9 % less
        // server CPU per single event), nothing added for a lone client. A fixed delay held every
        // request (2 ms: half the requests/s; 200 µs: -35 % at two connections). Measured in
        // docs/ingest-performance.md, "An adaptive commit delay".
        log.useServingCommitDelay()
        if let codec = try arguments.codec() { log.codec = codec }
        if let durability = try arguments.durability() { log.durability = durability }
        log.syncsInFlight = try arguments.integer("--syncs-in-flight", default: log.syncsInFlight, in: 1...8)
        if let text = try arguments.option("--commit-delay") {
            log.groupCommitDelay = try parseDuration(text, flag: "--commit-delay")
        }
        if let text = try arguments.option("--commit-bytes") {
            log.groupCommitBytes = Int(try parseBytes(text, flag: "--commit-bytes"))
            // 0 was refused only when the log opened (exit 1, "sizes must be positive", no flag named);
            // beyond a frame's hard maximum a group could never be written.
            guard (1...SegmentFormat.maxFrameBytes).contains(log.groupCommitBytes) else {
                throw UsageError(description: "--commit-bytes must be 1B...64MiB, got \(text)")
            }
        }
        if let text = try arguments.option("--segment-bytes") {
            log.maxSegmentBytes = try parseBytes(text, flag: "--segment-bytes")
            // Below a frame's worth every group commit would start a segment of its own (files by
            // the thousand, a rotation per request); beyond 64 GiB recovery and readers scan too far.
            guard (64 << 10...64 << 30).contains(log.maxSegmentBytes) else {
                throw UsageError(description: "--segment-bytes must be 64KiB...64GiB")
            }
        }
        if let text = try arguments.option("--segment-age") {
            log.maxSegmentAge = try parseDuration(text, flag: "--segment-age")
            // 0 sealed the open segment at every group commit (a file, a directory fsync and a
            // preallocation per request), unlike the 0 = "off" of --max-disk or --retention; an open
            // segment older than a week holds back what the daily report waits for.
            guard log.maxSegmentAge >= .seconds(1), log.maxSegmentAge <= .seconds(7 * 86_400) else {
                throw UsageError(description: "--segment-age must be 1s...7d, got \(text)")
            }
        }
        if let text = try arguments.option("--max-disk") {
            // 0 is "off", as for --dead-letter-max-disk, --retention and --preallocate: taken as a cap
            // of 0 bytes it answered every event 503 log_unavailable. A cap below a frame's worth would too.
            let bytes = try parseBytes(text, flag: "--max-disk")
            guard bytes == 0 || bytes >= 64 << 10 else {
                throw UsageError(description: "--max-disk must be at least 64KiB, or 0 for no cap, got \(text)")
            }
            log.maxDiskBytes = bytes == 0 ? nil : bytes
        }
        if let text = try arguments.option("--preallocate") {
            log.preallocationBytes = try parseBytes(text, flag: "--preallocate")
            guard log.preallocationBytes <= 1 << 30 else {
                throw UsageError(description: "--preallocate must be 0...1GiB")
            }
        }
        return log
    }

    /// The dead-letter log: the events log's settings in `directory`, with its own frame size and
    /// the dead letters' age and disk bounds.
    private static func parseDeadLetter(_ arguments: inout Arguments, log: LogConfiguration, directory: String)
        throws -> (log: LogConfiguration, retention: Duration?, maxBytes: Int64?)
    {
        var deadLetter = log
        deadLetter.directory = directory
        // Dead letters are few, and one may be a whole 10 MiB body: frames of at most 1 MiB (plus
        // the append that reaches it) keep the writer's pooled buffers at 2 MiB each, where the
        // events log's 8 MiB kept every dead letter of up to 16 MiB in each of its five jobs.
        deadLetter.maxBatchBytes = 1 << 20
        // Nothing loads dead letters, so nothing else would ever delete them: without these bounds a
        // client sending bad bodies (a publishable key ships inside every app) could fill the disk.
        var deadLetterRetention: Duration? = .seconds(7 * 86400)
        if let text = try arguments.option("--dead-letter-retention") {
            let age = try parseDuration(text, flag: "--dead-letter-retention")
            deadLetterRetention = age == .zero ? nil : age
        }
        // The open segment cannot be deleted: a cap of a few segments leaves room to prune. The
        // default grows with large segments; a cap given explicitly must leave that room itself.
        var deadLetterMaxBytes: Int64? = max(1 << 30, 4 * deadLetter.maxSegmentBytes)
        if let text = try arguments.option("--dead-letter-max-disk") {
            let bytes = try parseBytes(text, flag: "--dead-letter-max-disk")
            guard bytes == 0 || bytes >= 4 * deadLetter.maxSegmentBytes else {
                throw UsageError(description: "--dead-letter-max-disk must be at least 4x --segment-bytes or 0")
            }
            deadLetterMaxBytes = bytes == 0 ? nil : bytes
        }
        if let cap = deadLetterMaxBytes { deadLetter.maxDiskBytes = min(cap, deadLetter.maxDiskBytes ?? cap) }
        return (deadLetter, deadLetterRetention, deadLetterMaxBytes)
    }

    /// The HTTP server's flags (`ingestHelp`), validated together.
    private static func parseIngest(_ arguments: inout Arguments, environment: Environment) throws
        -> IngestConfiguration
    {
        var ingest = IngestConfiguration()
        // A refusal names what the operator set: a bad DETOUR_HTTP_ADDR was reported as --http-addr.
        let (addressValue, addressSource) = try arguments.option(
            "--http-addr", orEnvironment: "DETOUR_HTTP_ADDR", environment)
        let address = addressValue ?? "127.0.0.1:8080"
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw UsageError(description: "\(addressSource) must be HOST:PORT, got \(address)")
        }
        ingest.host = String(address[..<colon])
        ingest.port = port
        var probe = in_addr()
        guard inet_pton(AF_INET, ingest.host, &probe) == 1 else {
            throw UsageError(
                description: "\(addressSource) must be an IPv4 address such as 127.0.0.1:8080, got \(address)")
        }
        ingest.threads = try arguments.integer("--threads", default: ingest.threads, in: 1...1024)
        ingest.reportThreads = try arguments.integer("--report-threads", default: ingest.reportThreads, in: 1...64)
        if let text = try arguments.option("--max-body") {
            ingest.maxBodyBytes = Int(try parseBytes(text, flag: "--max-body"))
        }
        if let text = try arguments.option("--max-decompressed") {
            ingest.maxDecompressedBytes = Int(try parseBytes(text, flag: "--max-decompressed"))
        }
        if let text = try arguments.option("--max-buffered-bodies") {
            ingest.maxBufferedBodyBytes = Int(try parseBytes(text, flag: "--max-buffered-bodies"))
        }
        if let text = try arguments.option("--max-event") {
            ingest.maxEventBytes = Int(try parseBytes(text, flag: "--max-event"))
        }
        ingest.maxBatchEvents = try arguments.integer(
            "--max-batch-events", default: ingest.maxBatchEvents, in: 1...100_000)
        ingest.maxNameLength = try arguments.integer(
            "--max-name-length", default: ingest.maxNameLength, in: IngestConfiguration.maxNameLengthRange)
        ingest.maxDepth = try arguments.integer(
            "--max-depth", default: ingest.maxDepth, in: IngestConfiguration.maxDepthRange)
        ingest.maxValues = try arguments.integer(
            "--max-values", default: ingest.maxValues, in: IngestConfiguration.maxValuesRange)
        ingest.connectionLimit = try arguments.integer(
            "--connection-limit", default: ingest.connectionLimit, in: 1...1_000_000)
        ingest.perIPConnectionLimit = try arguments.integer(
            "--per-ip-connection-limit", default: ingest.perIPConnectionLimit, in: 0...1_000_000)
        if let text = try arguments.option("--idle-timeout") {
            // libmicrohttpd counts whole seconds, and 0 would mean "never": 0 and 0.5s were silently 1 s.
            let timeout = try parseDuration(text, flag: "--idle-timeout")
            guard timeout >= .seconds(1), timeout.components.attoseconds == 0 else {
                throw UsageError(description: "--idle-timeout must be whole seconds, at least 1s, got \(text)")
            }
            ingest.connectionTimeoutSeconds = Int(timeout.components.seconds)
        }
        if let text = try arguments.option("--connection-memory") {
            ingest.connectionMemoryBytes = Int(try parseBytes(text, flag: "--connection-memory"))
        }
        if let text = try arguments.option("--rate-limit") {
            guard let rate = Double(text), rate > 0, rate.isFinite else {
                throw UsageError(description: "--rate-limit must be a positive number")
            }
            ingest.rateLimitPerSecond = rate
        }
        if let text = try arguments.option("--rate-limit-burst") {
            guard ingest.rateLimitPerSecond != nil else {
                throw UsageError(description: "--rate-limit-burst needs --rate-limit")
            }
            guard let burst = Double(text), burst >= 1, burst.isFinite else {
                throw UsageError(description: "--rate-limit-burst must be a number of requests, at least 1")
            }
            ingest.rateLimitBurst = burst
        }
        do {
            try ingest.validate()
        } catch {
            throw UsageError(description: Self.naming(error))
        }
        return ingest
    }
}

extension PipelineOptions {
    /// The flag that sets each `IngestConfiguration` field, so a refusal names what the operator typed
    /// (it said "ingest configuration: maxBodyBytes must be at least 1024 bytes" for `--max-body 1000`).
    static let ingestFlags: [(field: String, flag: String)] = [
        ("maxDecompressedBytes", "--max-decompressed"), ("maxBufferedBodyBytes", "--max-buffered-bodies"),
        ("maxBodyBytes", "--max-body"), ("maxEventBytes", "--max-event"), ("maxBatchEvents", "--max-batch-events"),
        ("maxNameLength", "--max-name-length"), ("maxDepth", "--max-depth"),
        ("maxValues", "--max-values"),
        ("perIPConnectionLimit", "--per-ip-connection-limit"), ("connectionLimit", "--connection-limit"),
        ("connectionMemoryBytes", "--connection-memory"), ("connectionTimeoutSeconds", "--idle-timeout"),
        ("rateLimitPerSecond", "--rate-limit"), ("rateLimitBurst", "--rate-limit-burst"), ("threads", "--threads"),
        ("host", "--http-addr"), ("reportThreads", "--report-threads"),
    ]

    /// `error`'s reason with the configuration's field names replaced by their flags.
    static func naming(_ error: IngestConfigurationError) -> String {
        guard case .invalid(let field, let reason) = error,
            let flag = ingestFlags.first(where: { $0.field == field })?.flag
        else { return error.description }
        let text = ingestFlags.reduce(reason) { $0.replacingOccurrences(of: $1.field, with: $1.flag) }
        return "\(flag) \(text)"
    }
}

extension Arguments {
    /// `--durability fsync|interval:DUR`, nil when absent.
    /// - Throws: `UsageError` for any other value or a bad duration.
    mutating func durability() throws -> Durability? {
        guard let mode = try option("--durability") else { return nil }
        if mode == "fsync" { return .fsync }
        guard mode.hasPrefix("interval:") else {
            throw UsageError(description: "--durability must be fsync or interval:DUR")
        }
        return .interval(try parseDuration(String(mode.dropFirst(9)), flag: "--durability"))
    }

    /// `--codec zstd|gzip`, nil when absent.
    /// - Throws: `UsageError` for any other value.
    mutating func codec() throws -> Codec? {
        guard let text = try option("--codec") else { return nil }
        guard let codec = Codec(rawValue: text) else { throw UsageError(description: "--codec must be zstd or gzip") }
        return codec
    }
}
